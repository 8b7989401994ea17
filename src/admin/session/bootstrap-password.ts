/**
 * The bootstrap password: the admin login before IAM exists, and (through its bcrypt hash) the
 * key of the config database and of session cookies.
 *
 * Where the hash comes from, first match wins:
 *   1. `SVC_BOOTSTRAP_PASSWORD_HASH`, plain `$2a$/$2b$/$2y$…` or its base64 form;
 *   2. `SVC_ADMIN_PASSWORD_HASH` (legacy alias), same forms;
 *   3. `advanced.bootstrap_password_hash` in the config file, same forms;
 *   4. the file svc keeps, `<state dir>/bootstrap-password.bcrypt` (0600);
 *   5. none: svc generates a password, stores only its hash in that file and prints the
 *      plaintext once to stderr.
 * A malformed hash stops the start with an error naming where it came from. Only a hash from
 * svc's own file can be changed through the API (`change`); one set in the environment or the
 * config file is the operator's, so the API says where to change it instead of silently
 * diverging from it.
 *
 * bcrypt runs on a worker thread (password-hasher.ts): on the main thread even bcryptjs's async
 * compare stalls the event loop for hundreds of milliseconds and would stall S3 traffic.
 */
import { normalizeBcryptHash } from "../../config/mod.ts";
import { randomBytes } from "node:crypto";
import { writePrivateFile } from "../../lib/mod.ts";
import { AdminError } from "../admin-error.ts";
import { type PasswordHasher, passwordHasher } from "./password-hasher.ts";

export const HASH_FILE = "bootstrap-password.bcrypt";
/** New passwords: at least this many characters. */
export const MIN_PASSWORD_LENGTH = 12;
/** bcrypt reads only the first 72 bytes; a longer password would be silently cut. */
export const MAX_PASSWORD_BYTES = 72;
/** Cost of hashes svc makes (~0.4 s per hash or compare on this class of machine). */
export const DEFAULT_BCRYPT_COST = 12;

export type HashSource = "env" | "env_legacy" | "config" | "state_file";

const SOURCE_LABELS: Record<HashSource, (hashFile: string) => string> = {
  env: () => "the SVC_BOOTSTRAP_PASSWORD_HASH environment variable",
  env_legacy: () => "the SVC_ADMIN_PASSWORD_HASH environment variable",
  config: () => "advanced.bootstrap_password_hash in the config file",
  state_file: (hashFile) => `svc's hash file "${hashFile}"`,
};

export interface ResolveBootstrapOptions {
  env: Record<string, string | undefined>;
  /**
   * `advanced.bootstrap_password_hash` of the running config. The environment is checked first,
   * so passing the value with the SVC_* overlay applied is fine.
   */
  configHash: string | undefined;
  /** The state directory (e.g. `<data>/.svc`); the hash file lives there. */
  stateDir: string;
  /** Receives the one-time banner with a generated password; default: stderr. */
  announce?: (text: string) => void;
  /** Cost of hashes svc makes; default 12 (tests use 4). */
  bcryptCost?: number;
  /** Where bcrypt runs; default the shared worker. */
  hasher?: PasswordHasher;
}

/** What a password change re-encrypts (ConfigDb implements it). */
export interface Rekeyable {
  rekey(newHash: string, commitHash: () => Promise<void>): Promise<void>;
}

export { normalizeBcryptHash };

function parseHash(value: string, source: string): string {
  const hash = normalizeBcryptHash(value);
  if (hash === null) {
    throw new Error(
      `${source} is not a bcrypt hash (expected "$2a$", "$2b$" or "$2y$", cost 04-31, ` +
        `53 characters of salt and hash, or the base64 of one); it is ${value.length} ` +
        `characters long`,
    );
  }
  return hash;
}

function defaultAnnounce(text: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(text));
}

/** A random password of 24 URL-safe characters (144 bits). */
export function generatePassword(): string {
  return randomBytes(18).toString("base64url");
}

/** Writes the hash file: temp, fsync, rename, directory fsync. */
function writeHashFile(path: string, hash: string): Promise<void> {
  return writePrivateFile(path, `${hash}\n`);
}

async function readHashFile(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw new Error(`Cannot read the bootstrap password hash file "${path}": ${err}`);
  }
}

function banner(password: string, hashFile: string): string {
  const rule = "=".repeat(76);
  return [
    "",
    rule,
    "svc generated the admin (bootstrap) password. It is shown this ONCE:",
    "",
    `    ${password}`,
    "",
    "Log in to the admin API and console under /_/ with it. svc keeps only its bcrypt hash,",
    `in ${hashFile}; nobody can show it again.`,
    "Change it with PUT /_/api/admin/password (it re-encrypts the config database).",
    "Lost it? Stop svc, delete that file and start again: a new password is printed, and the",
    "config database, which the old one encrypted, is moved aside (not deleted).",
    rule,
    "",
    "",
  ].join("\n");
}

export class BootstrapPassword {
  readonly source: HashSource;
  /** svc's own hash file (used when `source` is `state_file`). */
  readonly hashFile: string;
  /** True when this start generated the password. */
  readonly generated: boolean;
  readonly #cost: number;
  readonly #hasher: PasswordHasher;
  #hash: string;

  private constructor(
    hash: string,
    source: HashSource,
    hashFile: string,
    generated: boolean,
    cost: number,
    hasher: PasswordHasher,
  ) {
    this.#hash = hash;
    this.source = source;
    this.hashFile = hashFile;
    this.generated = generated;
    this.#cost = cost;
    this.#hasher = hasher;
  }

  /** Finds the hash (see the header), generating and announcing a password on first run. */
  static async resolve(options: ResolveBootstrapOptions): Promise<BootstrapPassword> {
    const cost = options.bcryptCost ?? DEFAULT_BCRYPT_COST;
    const hasher = options.hasher ?? passwordHasher;
    const hashFile = `${options.stateDir}/${HASH_FILE}`;
    const make = (hash: string, source: HashSource, generated = false) =>
      new BootstrapPassword(hash, source, hashFile, generated, cost, hasher);
    const { env } = options;
    if (env.SVC_BOOTSTRAP_PASSWORD_HASH !== undefined) {
      return make(parseHash(env.SVC_BOOTSTRAP_PASSWORD_HASH, "SVC_BOOTSTRAP_PASSWORD_HASH"), "env");
    }
    if (env.SVC_ADMIN_PASSWORD_HASH !== undefined) {
      const hash = parseHash(env.SVC_ADMIN_PASSWORD_HASH, "SVC_ADMIN_PASSWORD_HASH");
      return make(hash, "env_legacy");
    }
    if (options.configHash !== undefined) {
      return make(parseHash(options.configHash, "advanced.bootstrap_password_hash"), "config");
    }
    const stored = await readHashFile(hashFile);
    if (stored !== null) {
      return make(
        parseHash(stored, `The bootstrap password hash file "${hashFile}"`),
        "state_file",
      );
    }
    await Deno.mkdir(options.stateDir, { recursive: true, mode: 0o700 });
    const password = generatePassword();
    const hash = await hasher.hash(password, cost);
    await writeHashFile(hashFile, hash);
    // Printed only once the hash is stored: a password that would not work is never shown.
    (options.announce ?? defaultAnnounce)(banner(password, hashFile));
    return make(hash, "state_file", true);
  }

  /** The bcrypt hash in force (changes after `change`). */
  get hash(): string {
    return this.#hash;
  }

  /** Where an operator changes the hash, for messages. */
  get sourceLabel(): string {
    return SOURCE_LABELS[this.source](this.hashFile);
  }

  /** True when `plain` is the password (bcrypt on the worker; never blocks the event loop). */
  verify(plain: string): Promise<boolean> {
    if (typeof plain !== "string" || plain === "") return Promise.resolve(false);
    return this.#hasher.compare(plain, this.#hash);
  }

  /**
   * Sets a new password: refuses (409) a hash the operator set elsewhere, refuses (400) a weak
   * or over-long one, then re-encrypts the config database, storing the new hash at the rekey's
   * commit point (a crash leaves the old or the new password working, with a database that
   * opens under it).
   */
  async change(newPlain: string, db: Rekeyable): Promise<void> {
    if (this.source !== "state_file") {
      throw new AdminError(
        "conflict",
        `The bootstrap password hash is set by ${this.sourceLabel}; change it there and restart ` +
          `svc (the config database must then be recovered or re-encrypted)`,
        { source: this.source },
      );
    }
    checkNewPassword(newPlain);
    const newHash = await this.#hasher.hash(newPlain, this.#cost);
    await db.rekey(newHash, () => writeHashFile(this.hashFile, newHash));
    this.#hash = newHash;
  }
}

/** Throws bad_request unless `plain` is an acceptable new password. */
export function checkNewPassword(plain: unknown): asserts plain is string {
  if (typeof plain !== "string") {
    throw new AdminError("bad_request", "The new password must be a string");
  }
  if ([...plain].length < MIN_PASSWORD_LENGTH) {
    throw new AdminError(
      "bad_request",
      `The new password must be at least ${MIN_PASSWORD_LENGTH} characters long`,
    );
  }
  if (new TextEncoder().encode(plain).length > MAX_PASSWORD_BYTES) {
    throw new AdminError(
      "bad_request",
      `The new password must be at most ${MAX_PASSWORD_BYTES} bytes (bcrypt ignores the rest)`,
    );
  }
}

/**
 * A backup archive: a zip whose first entry is `manifest.json` and whose other entries are the
 * parts it lists (docs/BACKUP.md). The manifest records, per part, the sha256 and size of the
 * bytes as stored in the zip (the sealed bytes when the backup is encrypted), so an archive is
 * checked whole (every part present, nothing extra, every digest equal) before a caller looks at
 * any part. What the parts mean is the caller's business (backup-parts.ts).
 */
import { type EncryptionInfo, PartOpener, PartSealer } from "./backup-crypto.ts";
import { BackupFormatError, readZip, type ReadZipLimits, zipStream } from "./backup-zip.ts";
import { isPlainObject } from "../lib/mod.ts";

export const BACKUP_FORMAT = "svc-backup";
/** Bumped when a reader of the previous version could misread an archive. */
export const BACKUP_FORMAT_VERSION = 1;
export const MANIFEST_NAME = "manifest.json";
/** Part names: plain file names (no path, no `__proto__`-style keys). */
const PART_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export interface PartInfo {
  /** Lower-case hex sha256 of the stored bytes. */
  sha256: string;
  /** Bytes stored. */
  size: number;
  /** base64 AES-GCM nonce, in encrypted backups only. */
  iv?: string;
}

export interface Manifest {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  svc_version: string;
  /** ISO 8601, UTC. */
  created_at: string;
  /** null when the parts are stored in the clear. */
  encryption: EncryptionInfo | null;
  parts: Record<string, PartInfo>;
}

export interface BackupPart {
  name: string;
  bytes: Uint8Array<ArrayBuffer>;
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new Uint8Array(bytes));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

export interface WriteOptions {
  svcVersion: string;
  createdAt: Date;
  /** Encrypt the parts under this password; absent: parts in the clear. */
  password?: string;
  /** PBKDF2 iterations (tests lower it; the default is KDF_ITERATIONS). */
  iterations?: number;
}

/** The archive as a zip stream, and its manifest. */
export async function writeBackup(
  parts: BackupPart[],
  options: WriteOptions,
): Promise<{ manifest: Manifest; stream: ReadableStream<Uint8Array> }> {
  const sealer = options.password === undefined
    ? undefined
    : await PartSealer.create(options.password, options.iterations);
  const stored: BackupPart[] = [];
  const manifest: Manifest = {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    svc_version: options.svcVersion,
    created_at: options.createdAt.toISOString(),
    encryption: sealer?.info ?? null,
    parts: {},
  };
  for (const part of parts) {
    if (
      !PART_NAME.test(part.name) || part.name === MANIFEST_NAME ||
      Object.hasOwn(manifest.parts, part.name)
    ) {
      throw new Error(`Backup part name "${part.name}" is reserved or repeated`);
    }
    const sealed = sealer ? await sealer.seal(part.name, part.bytes) : undefined;
    const bytes = sealed?.bytes ?? part.bytes;
    manifest.parts[part.name] = {
      sha256: await sha256Hex(bytes),
      size: bytes.byteLength,
      ...(sealed ? { iv: sealed.iv } : {}),
    };
    stored.push({ name: part.name, bytes: bytes as Uint8Array<ArrayBuffer> });
  }
  const manifestBytes = new TextEncoder().encode(JSON.stringify(manifest, null, 2) + "\n");
  const stream = zipStream(
    [{ name: MANIFEST_NAME, bytes: manifestBytes }, ...stored],
    options.createdAt,
  );
  return { manifest, stream };
}

function fail(message: string): never {
  throw new BackupFormatError(message);
}

function parseEncryption(value: unknown): EncryptionInfo | null {
  if (value === null || value === undefined) return null;
  if (
    !isPlainObject(value) || value.algorithm !== "AES-256-GCM" || value.kdf !== "PBKDF2-SHA256" ||
    !Number.isInteger(value.iterations) || (value.iterations as number) < 1 ||
    (value.iterations as number) > 10_000_000 || typeof value.salt !== "string"
  ) {
    fail("The manifest's encryption block is not one this build reads (AES-256-GCM, PBKDF2)");
  }
  return value as unknown as EncryptionInfo;
}

/** The manifest, checked for shape; throws BackupFormatError naming what is wrong. */
export function parseManifest(bytes: Uint8Array | undefined): Manifest {
  if (bytes === undefined) fail(`The zip has no ${MANIFEST_NAME}: not an svc backup`);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    fail(`${MANIFEST_NAME} is not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(value) || value.format !== BACKUP_FORMAT) {
    fail(`${MANIFEST_NAME} does not describe an svc backup (format "${BACKUP_FORMAT}")`);
  }
  const version = value.format_version;
  if (!Number.isInteger(version) || (version as number) < 1) {
    fail(`${MANIFEST_NAME} has no valid format_version`);
  }
  if ((version as number) > BACKUP_FORMAT_VERSION) {
    fail(
      `The backup has format version ${version}; this build reads up to ` +
        `${BACKUP_FORMAT_VERSION} (import it with a newer svc)`,
    );
  }
  const encryption = parseEncryption(value.encryption);
  if (!isPlainObject(value.parts)) fail(`${MANIFEST_NAME} has no parts object`);
  const parts: Record<string, PartInfo> = {};
  for (const [name, info] of Object.entries(value.parts)) {
    if (!PART_NAME.test(name)) fail(`${MANIFEST_NAME} lists a part named ${JSON.stringify(name)}`);
    if (
      !isPlainObject(info) || typeof info.sha256 !== "string" ||
      !/^[0-9a-f]{64}$/.test(info.sha256) ||
      !Number.isSafeInteger(info.size) || (info.size as number) < 0 ||
      (encryption !== null && typeof info.iv !== "string")
    ) {
      fail(`${MANIFEST_NAME} entry for part "${name}" needs sha256 (hex), size and, encrypted, iv`);
    }
    parts[name] = info as unknown as PartInfo;
  }
  return {
    format: BACKUP_FORMAT,
    format_version: version as number,
    svc_version: String(value.svc_version ?? "unknown"),
    created_at: String(value.created_at ?? ""),
    encryption,
    parts,
  };
}

export interface OpenOptions {
  password?: string;
  limits: ReadZipLimits;
}

export interface OpenedBackup {
  manifest: Manifest;
  /** Every part the manifest lists, verified and (when encrypted) decrypted. */
  parts: Map<string, Uint8Array>;
}

/**
 * Reads and verifies an archive: every part the manifest lists is present with its size and
 * sha256, no entry is unlisted, and encrypted parts open under the password. Throws
 * BackupFormatError (nothing was read by anyone yet, so nothing can have changed).
 */
export async function openBackup(zip: Uint8Array, options: OpenOptions): Promise<OpenedBackup> {
  const entries = readZip(zip, options.limits);
  const manifest = parseManifest(entries.get(MANIFEST_NAME));
  for (const name of entries.keys()) {
    if (name !== MANIFEST_NAME && !Object.hasOwn(manifest.parts, name)) {
      fail(`The zip holds "${name}", which the manifest does not list`);
    }
  }
  for (const [name, info] of Object.entries(manifest.parts)) {
    const bytes = entries.get(name);
    if (bytes === undefined) fail(`The manifest lists part "${name}", which the zip lacks`);
    if (bytes.byteLength !== info.size || await sha256Hex(bytes) !== info.sha256) {
      fail(`Part "${name}" does not match the manifest's sha256 and size: the backup is damaged`);
    }
  }
  if (manifest.encryption === null) {
    const parts = new Map(Object.keys(manifest.parts).map((name) => [name, entries.get(name)!]));
    return { manifest, parts };
  }
  if (options.password === undefined) {
    fail("The backup is encrypted: send its password in the X-Svc-Backup-Password header");
  }
  const opener = await PartOpener.create(options.password, manifest.encryption);
  const parts = new Map<string, Uint8Array>();
  for (const [name, info] of Object.entries(manifest.parts)) {
    const plain = await opener.open(name, entries.get(name)!, info.iv!);
    if (plain === null) fail(`Part "${name}" does not decrypt: wrong password or a damaged backup`);
    parts.set(name, plain);
  }
  return { manifest, parts };
}

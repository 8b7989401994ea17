/**
 * The IAM index: an immutable snapshot built from the store (access key → principal with its
 * compiled group + direct statements, templates expanded per user), and the holder that swaps it
 * atomically after each change. A request reads `holder.current` once and works on that snapshot,
 * so it never sees half of a change; lookups are Map reads and evaluation walks one user's
 * statements, so the cost does not grow with the number of users.
 */
import type { Credential, CredentialStore, Principal } from "./credentials.ts";
import { getLogger } from "../observability/mod.ts";
import type { KeyVisibility } from "./key-visibility.ts";
import type { IamSnapshotData, Permission } from "./model.ts";
import {
  type AuthzRequest,
  type CompiledStatement,
  compileStatement,
  type Decision,
  deniedRange,
  evaluate,
  expandPermission,
  intersectRanges,
  listRanges,
} from "./evaluate.ts";

const log = getLogger("svc::iam");

/** The synthetic principal of the bootstrap key pair: allowed everything. */
export const BOOTSTRAP_PRINCIPAL = "$bootstrap";

export interface IamPrincipal extends Principal {
  userId: string;
  secretAccessKey: string;
  /** Group statements first (groups by name), then the user's direct ones. */
  statements: readonly CompiledStatement[];
}

/** What a listing check needs besides the principal. */
export interface ListContext {
  bucket: string;
  /** The request's `prefix` ("" when none). */
  prefix: string;
  sourceIp?: string;
}

export class IamIndex {
  /** The store's `iam_version` this snapshot was built from. */
  readonly version: number;
  /** Enabled users only: a disabled user's key is unknown to SigV4. */
  readonly #byAccessKey: ReadonlyMap<string, IamPrincipal>;
  readonly #byName: ReadonlyMap<string, IamPrincipal>;
  readonly userCount: number;

  private constructor(version: number, byAccessKey: Map<string, IamPrincipal>, users: number) {
    this.version = version;
    this.#byAccessKey = byAccessKey;
    this.#byName = new Map([...byAccessKey.values()].map((p) => [p.name, p]));
    this.userCount = users;
  }

  static empty(): IamIndex {
    return new IamIndex(0, new Map(), 0);
  }

  static build(data: IamSnapshotData): IamIndex {
    // A permission without templates compiles to the same statement for every user holding it
    // at the same place (a group's, or a common direct grant): compile it once and share it
    // (10,000 members would otherwise compile it 10,000 times). Templated ones are expanded and
    // compiled per user.
    const shared = new Map<string, CompiledStatement>();
    const groups = new Map(data.groups.map((g) => [g.name, g]));
    const byAccessKey = new Map<string, IamPrincipal>();
    for (const user of data.users) {
      if (!user.enabled || user.secret_access_key === "") continue;
      const values = { username: user.name, accessKeyId: user.access_key_id };
      const compile = (source: string, index: number, permission: Permission) => {
        const json = JSON.stringify(permission);
        if (json.includes("${iam:")) {
          return compileStatement({
            source,
            index,
            permission: expandPermission(permission, values),
          });
        }
        const key = `${source}\u0000${index}\u0000${json}`;
        let statement = shared.get(key);
        if (!statement) {
          statement = compileStatement({ source, index, permission });
          shared.set(key, statement);
        }
        return statement;
      };
      const statements: CompiledStatement[] = [];
      for (const name of user.groups) {
        (groups.get(name)?.permissions ?? []).forEach((permission, index) => {
          statements.push(compile(`group:${name}`, index, permission));
        });
      }
      user.permissions.forEach((permission, index) => {
        statements.push(compile("user", index, permission));
      });
      byAccessKey.set(user.access_key_id, {
        name: user.name,
        accessKeyId: user.access_key_id,
        userId: user.id,
        secretAccessKey: user.secret_access_key,
        statements,
      });
    }
    return new IamIndex(data.version, byAccessKey, data.users.length);
  }

  /** The enabled IAM user named `name`, or undefined. */
  principalByName(name: string): IamPrincipal | undefined {
    return this.#byName.get(name);
  }

  /** The enabled IAM user holding `accessKeyId`, or undefined. */
  principal(accessKeyId: string): IamPrincipal | undefined {
    return this.#byAccessKey.get(accessKeyId);
  }

  /**
   * Decides `request` for `principal` as this snapshot knows it: the bootstrap principal is
   * allowed everything; a key this snapshot does not hold (deleted, disabled, rotated away) is
   * denied.
   */
  authorize(principal: Principal, request: AuthzRequest): Decision {
    if (principal.name === BOOTSTRAP_PRINCIPAL) return { allowed: true, reason: "bootstrap" };
    const entry = this.#byAccessKey.get(principal.accessKeyId);
    if (!entry || entry.name !== principal.name) {
      return { allowed: false, reason: "unknown_principal" };
    }
    return evaluate(entry.statements, request, entry.name);
  }

  /** May `principal` list `bucket` under `prefix` (the listing then passes `keyFilter`)? */
  mayList(principal: Principal, context: ListContext): boolean {
    return this.authorize(principal, { action: "list", ...context }).allowed;
  }

  /**
   * The predicate a listing applies to each key and common prefix it would return: keys the
   * principal may `list` and `read`, and common prefixes under which it may list something. Nothing outside
   * the grant shows, not even as a common prefix.
   */
  keyFilter(principal: Principal, context: ListContext): {
    key(key: string): boolean;
    commonPrefix(prefix: string): boolean;
  } {
    const request = { action: "list" as const, ...context };
    // A key is shown when the user may list it and read it (a GetObject asks no s3:prefix).
    const read = { action: "read" as const, bucket: context.bucket, sourceIp: context.sourceIp };
    return {
      key: (key) =>
        this.authorize(principal, { ...request, key }).allowed &&
        this.authorize(principal, { ...read, key }).allowed,
      commonPrefix: (prefix) => this.authorize(principal, { ...request, prefix }).allowed,
    };
  }

  /**
   * What a listing of `context.bucket` may show `principal` (SPEC Authentication 7: "list results
   * show only what the user may read"): keys it may both `list` and `read`. Undefined when it sees
   * every key (the bootstrap key, or unconditional grants of both on the whole bucket with no
   * Deny there), else the ranges both grants cover and, when a Deny, a condition or a narrower
   * glob applies, the per-entry filter and the denied ranges a listing may jump over.
   */
  listVisibility(principal: Principal, context: ListContext): KeyVisibility | undefined {
    if (principal.name === BOOTSTRAP_PRINCIPAL) return undefined;
    const entry = this.#byAccessKey.get(principal.accessKeyId);
    if (!entry || entry.name !== principal.name) return { prefixes: [] };
    const list = listRanges(entry.statements, context.bucket, "list");
    const read = listRanges(entry.statements, context.bucket, "read");
    const prefixes = intersectRanges(list.prefixes, read.prefixes);
    const filtered = list.filtered || read.filtered;
    if (!filtered && prefixes.length === 1 && prefixes[0] === "") return undefined;
    if (!filtered) return { prefixes };
    const filter = this.keyFilter(principal, context);
    return {
      prefixes,
      visible: (name, kind) => kind === "object" ? filter.key(name) : filter.commonPrefix(name),
      hiddenRange: (key) => deniedRange(entry.statements, context.bucket, key, ["list", "read"]),
    };
  }

  /** The buckets of `names` ListBuckets shows: those the principal may list something in. */
  bucketsVisible(principal: Principal, names: readonly string[], sourceIp?: string): string[] {
    return names.filter((bucket) => this.mayList(principal, { bucket, prefix: "", sourceIp }));
  }

  /** Has `principal` the `admin` action on everything (admin console, login-as)? */
  isAdmin(principal: Principal, sourceIp?: string): boolean {
    return this.authorize(principal, { action: "admin", sourceIp }).allowed;
  }
}

/** What the holder rebuilds from (IamStore). */
export interface IamSource {
  snapshot(): Promise<IamSnapshotData>;
}

/**
 * Holds the current index and rebuilds it from the store. Rebuilds run one at a time; a request
 * for a rebuild while one runs is served by one more rebuild after it (so a change committed
 * during a rebuild is never missed), and an older snapshot never replaces a newer one.
 */
export class IamIndexHolder {
  readonly #source: IamSource;
  #current: IamIndex = IamIndex.empty();
  #running: Promise<IamIndex> | null = null;
  #again: Promise<IamIndex> | null = null;

  readonly #onRebuilt?: (seconds: number) => void;

  /** `onRebuilt` is told how long each rebuild took (metrics). */
  constructor(source: IamSource, onRebuilt?: (seconds: number) => void) {
    this.#source = source;
    this.#onRebuilt = onRebuilt;
  }

  get current(): IamIndex {
    return this.#current;
  }

  get version(): number {
    return this.#current.version;
  }

  /** Reads the store and swaps in a new index; resolves with the index in effect after it. */
  rebuild(): Promise<IamIndex> {
    if (this.#running === null) {
      this.#running = this.#build().finally(() => {
        this.#running = null;
      });
      return this.#running;
    }
    if (this.#again === null) {
      this.#again = this.#running.catch(() => undefined).then(() => {
        this.#again = null;
        return this.rebuild();
      });
    }
    return this.#again;
  }

  async #build(): Promise<IamIndex> {
    const started = performance.now();
    const next = IamIndex.build(await this.#source.snapshot());
    if (next.version >= this.#current.version) this.#current = next;
    this.#onRebuilt?.((performance.now() - started) / 1000);
    log.debug("IAM index rebuilt", {
      version: next.version,
      users: next.userCount,
      ms: Math.round(performance.now() - started),
    });
    return this.#current;
  }
}

/** SigV4's view of IAM users: the current index's enabled keys. */
export class IamCredentials implements CredentialStore {
  readonly #holder: { readonly current: IamIndex };

  constructor(holder: { readonly current: IamIndex }) {
    this.#holder = holder;
  }

  lookup(accessKeyId: string): Credential | null {
    const principal = this.#holder.current.principal(accessKeyId);
    return principal
      ? {
        secretAccessKey: principal.secretAccessKey,
        principal: { name: principal.name, accessKeyId: principal.accessKeyId },
      }
      : null;
  }
}

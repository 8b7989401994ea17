/**
 * Unit tests of the `SVC_*` environment layer: every binding's parsing, bad values reported with
 * the variable's name, `SVC_DATA_DIR` routing, and the environment winning over the file when the
 * whole loader runs.
 */
import assert from "node:assert/strict";
import { applyEnvironment, ENV_BINDINGS } from "./env.ts";
import { loadConfig } from "./load.ts";
import { ConfigError } from "./schema/schema.ts";

type Doc = Record<string, unknown>;

/** One good value per binding, with what it parses to. Kept in step with ENV_BINDINGS. */
const GOOD: Record<string, { raw: string; value: unknown }> = {
  SVC_LISTEN_ADDR: { raw: "127.0.0.1:8080", value: "127.0.0.1:8080" },
  SVC_LOG_LEVEL: { raw: "warn", value: "warn" },
  SVC_REQUEST_TIMEOUT_SECS: { raw: "30", value: 30 },
  SVC_MAX_CONCURRENT_REQUESTS: { raw: " 64 ", value: 64 },
  SVC_MAX_CONNECTIONS: { raw: "500", value: 500 },
  SVC_HEADER_TIMEOUT_SECS: { raw: "2.5", value: 2.5 },
  SVC_IDLE_TIMEOUT_SECS: { raw: "30", value: 30 },
  SVC_BODY_STALL_TIMEOUT_SECS: { raw: "5", value: 5 },
  SVC_READY_MAX_SLOT_WAIT_SECS: { raw: "0", value: 0 },
  SVC_MAX_MULTIPART_UPLOADS: { raw: "5", value: 5 },
  SVC_MULTIPART_IDLE_TTL_HOURS: { raw: "0.5", value: 0.5 },
  SVC_MAX_OBJECT_SIZE: { raw: "1048576", value: 1048576 },
  SVC_DEBUG_HEADERS: { raw: "true", value: true },
  SVC_CORS_PERMISSIVE: { raw: "yes", value: true },
  SVC_TRUST_PROXY_HEADERS: { raw: "1", value: true },
  SVC_CLOCK_SKEW_SECONDS: { raw: "60", value: 60 },
  SVC_REPLAY_WINDOW_SECS: { raw: "0", value: 0 },
  SVC_RATE_LIMIT_MAX_ATTEMPTS: { raw: "5", value: 5 },
  SVC_RATE_LIMIT_WINDOW_SECS: { raw: "30", value: 30 },
  SVC_RATE_LIMIT_LOCKOUT_SECS: { raw: "120", value: 120 },
  SVC_LOG_FORMAT: { raw: "json", value: "json" },
  SVC_LOG_RING_SIZE: { raw: "100", value: 100 },
  SVC_LOG_RING_LEVEL: { raw: "warn", value: "warn" },
  SVC_AUDIT_RING_SIZE: { raw: "50", value: 50 },
  SVC_READY_TIMEOUT_SECS: { raw: "0.5", value: 0.5 },
  SVC_READY_RETRIES: { raw: "1", value: 1 },
  SVC_READY_CACHE_TTL_SECS: { raw: "10", value: 10 },
  SVC_MAX_DELTA_RATIO: { raw: "0.5", value: 0.5 },
  SVC_STORAGE_COMPRESSION: { raw: "baselines", value: "baselines" },
  SVC_ZSTD_LEVEL: { raw: "9", value: 9 },
  SVC_CACHE_MB: { raw: "2048", value: 2048 },
  SVC_METADATA_CACHE_MB: { raw: "0", value: 0 },
  SVC_CODEC_CONCURRENCY: { raw: "32", value: 32 },
  SVC_CODEC_TIMEOUT_SECS: { raw: "90", value: 90 },
  SVC_REBUILT_CACHE_MB: { raw: "64", value: 64 },
  SVC_CODEC_SLOT_WAIT_SECS: { raw: "2.5", value: 2.5 },
  SVC_BLOCKING_THREADS: { raw: "64", value: 64 },
  SVC_MAX_PASSTHROUGH_OBJECT_SIZE: { raw: "1073741824", value: 1073741824 },
  SVC_S3_CONNECT_TIMEOUT_SECS: { raw: "2.5", value: 2.5 },
  SVC_S3_READ_TIMEOUT_SECS: { raw: "20", value: 20 },
  SVC_S3_OPERATION_ATTEMPT_TIMEOUT_SECS: { raw: "120", value: 120 },
  SVC_S3_STALL_GRACE_SECS: { raw: "15", value: 15 },
  SVC_PARITY_HEAD_CONCURRENCY: { raw: "8", value: 8 },
  SVC_PARITY_MAX_OBJECTS: { raw: "5000", value: 5000 },
  SVC_BOOT_BACKEND_PROBE: { raw: "warn", value: "warn" },
  SVC_BACKEND_LIST_COOLDOWN_SECS: { raw: "10", value: 10 },
  SVC_BACKEND_LIST_TIMEOUT_SECS: { raw: "2", value: 2 },
  SVC_BACKEND_LIST_FRESH_SECS: { raw: "0", value: 0 },
  SVC_STREAM_COPY_THRESHOLD: { raw: "1048576", value: 1048576 },
  SVC_MULTIPART_PART_SIZE: { raw: "8388608", value: 8388608 },
  SVC_UPLOAD_CONCURRENCY: { raw: "8", value: 8 },
  SVC_REPLICATION_TRANSFERS: { raw: "16", value: 16 },
  SVC_MAX_TOTAL_MULTIPART_BYTES: { raw: "1000000", value: 1000000 },
  SVC_SESSION_TTL_HOURS: { raw: "1.5", value: 1.5 },
  SVC_SECURE_COOKIES: { raw: "Auto", value: "auto" },
  SVC_OIDC_ALLOW_HTTP_ISSUERS: { raw: "yes", value: true },
  SVC_BOOTSTRAP_PASSWORD_HASH: {
    raw: "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
    value: "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
  },
  SVC_TLS_ENABLED: { raw: "true", value: true },
  SVC_TLS_CERT: { raw: "/etc/svc/cert.pem", value: "/etc/svc/cert.pem" },
  SVC_TLS_KEY: { raw: "/etc/svc/key.pem", value: "/etc/svc/key.pem" },
  SVC_CONFIG_SYNC_BUCKET: { raw: "svc-sync", value: "svc-sync" },
  SVC_CONFIG_SYNC_POLL_SECS: { raw: "30", value: 30 },
  SVC_AUTHENTICATION: { raw: "none", value: "none" },
  SVC_ACCESS_KEY_ID: { raw: "AKIAENV", value: "AKIAENV" },
  SVC_SECRET_ACCESS_KEY: { raw: "env-secret", value: "env-secret" },
};

/** Values the variable's kind cannot parse, with the phrase the error uses. */
const BAD_BY_KIND: Record<string, { raw: string[]; phrase: string }> = {
  int: { raw: ["abc", "", "  ", "1.5", "12abc", "Infinity"], phrase: "expected an integer" },
  number: { raw: ["abc", "", "NaN", "-Infinity"], phrase: "expected a number" },
  bool: { raw: ["maybe", "", "2", "truthy"], phrase: "expected true or false" },
  "bool-or-auto": { raw: ["maybe", "", "automatic"], phrase: "expected true, false or auto" },
};

function getPath(document: Doc, path: string[]): unknown {
  let node: unknown = document;
  for (const part of path) node = (node as Doc | undefined)?.[part];
  return node;
}

function assertConfigError(fn: () => unknown, ...patterns: (string | RegExp)[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    for (const pattern of patterns) {
      if (typeof pattern === "string") assert.ok(err.message.includes(pattern), err.message);
      else assert.match(err.message, pattern);
    }
    return true;
  });
}

async function assertLoadError(
  promise: Promise<unknown>,
  ...patterns: (string | RegExp)[]
): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    for (const pattern of patterns) {
      if (typeof pattern === "string") assert.ok(err.message.includes(pattern), err.message);
      else assert.match(err.message, pattern);
    }
    return true;
  });
}

async function withTempDir(test: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-env-test-" });
  try {
    await test(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the test table covers every binding in ENV_BINDINGS", () => {
  assert.deepEqual(
    Object.keys(GOOD).sort(),
    ENV_BINDINGS.map((b) => b.name).sort(),
  );
});

Deno.test("each binding sets its document path with the parsed value", () => {
  for (const { name, path } of ENV_BINDINGS) {
    const document: Doc = {};
    applyEnvironment(document, { [name]: GOOD[name].raw });
    assert.deepEqual(getPath(document, path), GOOD[name].value, name);
    // Nothing else is touched.
    assert.deepEqual(Object.keys(document), [path[0]], name);
  }
});

Deno.test("each binding overrides a value already in the document", () => {
  for (const { name, path } of ENV_BINDINGS) {
    // Nested paths (advanced.tls.*) get the file value at their own depth.
    const leaf: Doc = { [path[path.length - 1]]: "from-file", other: "kept" };
    const document = path.slice(0, -1).reduceRight<Doc>((inner, key) => ({ [key]: inner }), leaf);
    applyEnvironment(document, { [name]: GOOD[name].raw });
    assert.deepEqual(getPath(document, path), GOOD[name].value, name);
    assert.equal(getPath(document, [...path.slice(0, -1), "other"]), "kept", name);
  }
});

Deno.test("unset variables leave the document alone", () => {
  const document: Doc = { advanced: { max_object_size: 5 } };
  applyEnvironment(document, { UNRELATED: "x", SVC_NOT_A_SETTING: "y" });
  assert.deepEqual(document, { advanced: { max_object_size: 5 } });
});

Deno.test("a bad value is a ConfigError naming the variable and the raw value", () => {
  for (const { name, kind } of ENV_BINDINGS) {
    if (kind === "string") continue;
    const bad = BAD_BY_KIND[kind];
    assert.ok(bad, `no bad values for kind ${kind}`);
    for (const raw of bad.raw) {
      assertConfigError(
        () => applyEnvironment({}, { [name]: raw }),
        `${name}:`,
        bad.phrase,
        `"${raw}"`,
      );
    }
  }
});

Deno.test("SVC_MAX_OBJECT_SIZE=abc names the variable", () => {
  assertConfigError(
    () => applyEnvironment({}, { SVC_MAX_OBJECT_SIZE: "abc" }),
    /^SVC_MAX_OBJECT_SIZE: expected an integer, got "abc"$/,
  );
});

Deno.test("booleans accept the usual spellings in any case", () => {
  for (const raw of ["true", "TRUE", "1", "yes", "On", " true "]) {
    const document: Doc = {};
    applyEnvironment(document, { SVC_DEBUG_HEADERS: raw });
    assert.equal(getPath(document, ["advanced", "debug_headers"]), true, raw);
  }
  for (const raw of ["false", "False", "0", "no", "OFF"]) {
    const document: Doc = {};
    applyEnvironment(document, { SVC_DEBUG_HEADERS: raw });
    assert.equal(getPath(document, ["advanced", "debug_headers"]), false, raw);
  }
});

Deno.test("SVC_SECURE_COOKIES takes auto besides the boolean spellings", () => {
  const cases: [string, string | boolean][] = [["auto", "auto"], ["AUTO", "auto"], ["yes", true], [
    "0",
    false,
  ]];
  for (const [raw, value] of cases) {
    const document: Doc = {};
    applyEnvironment(document, { SVC_SECURE_COOKIES: raw });
    assert.equal(getPath(document, ["advanced", "secure_cookies"]), value, raw);
  }
});

Deno.test("a variable over a section that is not a mapping is a ConfigError naming the path", () => {
  assertConfigError(
    () => applyEnvironment({ advanced: "oops" }, { SVC_LOG_LEVEL: "info" }),
    "advanced.log_level",
    "non-object",
  );
  assertConfigError(
    () => applyEnvironment({ access: ["a"] }, { SVC_ACCESS_KEY_ID: "k" }),
    "access.access_key_id",
  );
});

Deno.test("a null section is replaced by one holding the variable", () => {
  const document: Doc = { advanced: null };
  applyEnvironment(document, { SVC_LOG_LEVEL: "info" });
  assert.deepEqual(document, { advanced: { log_level: "info" } });
});

Deno.test("SVC_DATA_DIR sets storage.filesystem when no backend is configured", () => {
  const empty: Doc = {};
  applyEnvironment(empty, { SVC_DATA_DIR: "/srv/data" });
  assert.deepEqual(empty, { storage: { filesystem: "/srv/data" } });

  const withShorthand: Doc = { storage: { filesystem: "/from/file" } };
  applyEnvironment(withShorthand, { SVC_DATA_DIR: "/srv/data" });
  assert.deepEqual(withShorthand, { storage: { filesystem: "/srv/data" } });
});

Deno.test("SVC_DATA_DIR sets storage.backend.path for a filesystem backend", () => {
  const document: Doc = { storage: { backend: { type: "filesystem", path: "/from/file" } } };
  applyEnvironment(document, { SVC_DATA_DIR: "/srv/data" });
  assert.deepEqual(document, { storage: { backend: { type: "filesystem", path: "/srv/data" } } });

  const withoutPath: Doc = { storage: { backend: { type: "filesystem" } } };
  applyEnvironment(withoutPath, { SVC_DATA_DIR: "/srv/data" });
  assert.deepEqual(withoutPath, {
    storage: { backend: { type: "filesystem", path: "/srv/data" } },
  });
});

Deno.test("SVC_DATA_DIR leaves an s3 backend alone", () => {
  const document: Doc = { storage: { backend: { type: "s3", endpoint: "http://s3" } } };
  applyEnvironment(document, { SVC_DATA_DIR: "/srv/data" });
  assert.deepEqual(document, { storage: { backend: { type: "s3", endpoint: "http://s3" } } });
});

Deno.test("applyEnvironment reports which document paths came from which variable", () => {
  const sources = applyEnvironment({}, {
    SVC_MAX_OBJECT_SIZE: "10",
    SVC_DATA_DIR: "/d",
    SVC_LOG_LEVEL: "info",
  });
  assert.equal(sources.get("advanced.max_object_size"), "SVC_MAX_OBJECT_SIZE");
  assert.equal(sources.get("advanced.log_level"), "SVC_LOG_LEVEL");
  assert.equal(sources.get("storage.filesystem"), "SVC_DATA_DIR");
  assert.equal(sources.size, 3);

  const backend = applyEnvironment({ storage: { backend: { type: "filesystem" } } }, {
    SVC_DATA_DIR: "/d",
  });
  assert.deepEqual([...backend], [["storage.backend.path", "SVC_DATA_DIR"]]);
});

// --- through the whole loader -------------------------------------------------------------------

const FILE = `
access:
  access_key_id: AKIAFILE
  secret_access_key: file-secret
  authentication: sigv4
advanced:
  listen_addr: 10.0.0.1:7000
  log_level: debug
  request_timeout_secs: 11
  max_concurrent_requests: 12
  max_multipart_uploads: 13
  multipart_idle_ttl_hours: 14
  max_object_size: 15
  debug_headers: false
  cors_permissive: false
  trust_proxy_headers: false
storage:
  filesystem: /from/file
`;

Deno.test("every SVC_* variable wins over the file in the loaded config", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.yaml`;
    await Deno.writeTextFile(file, FILE);
    const env: Record<string, string> = { SVC_DATA_DIR: "/srv/env-data" };
    for (const name of Object.keys(GOOD)) env[name] = GOOD[name].raw;
    const { config } = await loadConfig({ configPath: file, env });
    for (const { name, path } of ENV_BINDINGS) {
      assert.deepEqual(getPath(config as unknown as Doc, path), GOOD[name].value, name);
    }
    assert.equal(config.storage.filesystem, "/srv/env-data");
  });
});

Deno.test("without variables the file's values stand", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.yaml`;
    await Deno.writeTextFile(file, FILE);
    const { config } = await loadConfig({ configPath: file, env: {} });
    assert.equal(config.advanced.listen_addr, "10.0.0.1:7000");
    assert.equal(config.advanced.max_object_size, 15);
    assert.equal(config.access.access_key_id, "AKIAFILE");
    assert.equal(config.storage.filesystem, "/from/file");
  });
});

Deno.test("SVC_DATA_DIR reaches a filesystem backend's path through the loader", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.yaml`;
    await Deno.writeTextFile(file, "storage:\n  backend:\n    type: filesystem\n    path: /a\n");
    const { config } = await loadConfig({ configPath: file, env: { SVC_DATA_DIR: "/b" } });
    assert.equal(config.storage.backend?.path, "/b");
    assert.equal(config.storage.filesystem, undefined);
  });
});

Deno.test("a bad variable fails the load with the variable's name", async () => {
  await withTempDir(async (dir) => {
    await assertLoadError(
      loadConfig({ cwd: dir, env: { SVC_MAX_OBJECT_SIZE: "abc" } }),
      "SVC_MAX_OBJECT_SIZE",
      '"abc"',
    );
    await assertLoadError(
      loadConfig({ cwd: dir, env: { SVC_CORS_PERMISSIVE: "perhaps" } }),
      "SVC_CORS_PERMISSIVE",
    );
  });
});

Deno.test("a parsed variable out of range names both the path and the variable", async () => {
  await withTempDir(async (dir) => {
    await assertLoadError(
      loadConfig({ cwd: dir, env: { SVC_MAX_OBJECT_SIZE: "-1" } }),
      "advanced.max_object_size",
      "SVC_MAX_OBJECT_SIZE",
    );
    await assertLoadError(
      loadConfig({ cwd: dir, env: { SVC_REQUEST_TIMEOUT_SECS: "0" } }),
      "advanced.request_timeout_secs",
      "SVC_REQUEST_TIMEOUT_SECS",
    );
    await assertLoadError(
      loadConfig({ cwd: dir, env: { SVC_DATA_DIR: "../outside" } }),
      "storage.filesystem",
      "SVC_DATA_DIR",
      "../outside",
    );
    await assertLoadError(
      loadConfig({ cwd: dir, env: { SVC_LISTEN_ADDR: "nonsense" } }),
      "advanced.listen_addr",
      "SVC_LISTEN_ADDR",
    );
  });
});

Deno.test("SVC_DATA_DIR over a storage section that is not a mapping is a ConfigError", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.yaml`;
    await Deno.writeTextFile(file, "storage: just-a-string\n");
    await assertLoadError(
      loadConfig({ configPath: file, env: { SVC_DATA_DIR: "/d" } }),
      /^storage/,
    );
  });
});

// --- backend and encryption variables ---------------------------------------------------------

const KEY_A = "a".repeat(64);
const KEY_B = "b".repeat(64);

Deno.test("SVC_S3_ENDPOINT creates an s3 backend, and its companions fill it", () => {
  const document: Doc = {};
  const sources = applyEnvironment(document, {
    SVC_S3_ENDPOINT: "http://minio:9000",
    SVC_S3_REGION: "eu-west-1",
    SVC_S3_PATH_STYLE: "false",
    SVC_BE_AWS_ACCESS_KEY_ID: "AKBE",
    SVC_BE_AWS_SECRET_ACCESS_KEY: "be-secret",
  });
  assert.deepEqual(document, {
    storage: {
      backend: {
        type: "s3",
        endpoint: "http://minio:9000",
        region: "eu-west-1",
        force_path_style: false,
        access_key_id: "AKBE",
        secret_access_key: "be-secret",
      },
    },
  });
  assert.equal(sources.get("storage.backend.region"), "SVC_S3_REGION");
});

Deno.test("SVC_S3_* land on the s3 shorthand and win over the file", () => {
  const document: Doc = { storage: { s3: "http://file", region: "us-east-2" } };
  applyEnvironment(document, { SVC_S3_ENDPOINT: "https://env", SVC_S3_REGION: "eu-west-1" });
  assert.deepEqual(document, { storage: { s3: "https://env", region: "eu-west-1" } });
});

Deno.test("SVC_S3_ENDPOINT replaces a filesystem single backend; SVC_DATA_DIR then stays out", () => {
  const document: Doc = { storage: { filesystem: "/d" } };
  applyEnvironment(document, { SVC_S3_ENDPOINT: "http://m", SVC_DATA_DIR: "/x" });
  assert.deepEqual(document, { storage: { backend: { type: "s3", endpoint: "http://m" } } });
});

Deno.test("S3 companions without an s3 backend are ignored", () => {
  const document: Doc = { storage: { filesystem: "/d" } };
  applyEnvironment(document, { SVC_S3_REGION: "eu-west-1" });
  assert.deepEqual(document, { storage: { filesystem: "/d" } });
});

Deno.test("encryption key variables reach the single and the named backends", () => {
  const document: Doc = {
    storage: {
      backend_encryption: { mode: "aes256-gcm-proxy", key: KEY_B },
      backends: [
        { name: "eu-west.1", type: "s3", encryption: { mode: "aes256-gcm-proxy" } },
        { name: "kms", type: "s3", encryption: { mode: "sse-kms" } },
      ],
    },
  };
  const sources = applyEnvironment(document, {
    SVC_ENCRYPTION_KEY: KEY_A,
    SVC_SSE_KMS_KEY_ID: "alias/single",
    SVC_BACKEND_EU_WEST_1_ENCRYPTION_KEY: KEY_A,
    SVC_BACKEND_KMS_SSE_KMS_KEY_ID: "alias/kms",
  });
  const storage = document.storage as Doc;
  assert.deepEqual(storage.backend_encryption, {
    mode: "aes256-gcm-proxy",
    key: KEY_A,
    kms_key_id: "alias/single",
  });
  const backends = storage.backends as Doc[];
  assert.equal((backends[0].encryption as Doc).key, KEY_A);
  assert.equal((backends[1].encryption as Doc).kms_key_id, "alias/kms");
  assert.equal(
    sources.get("storage.backends.0.encryption.key"),
    "SVC_BACKEND_EU_WEST_1_ENCRYPTION_KEY",
  );
});

Deno.test("a bad encryption key from the environment names the variable", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.yaml`;
    await Deno.writeTextFile(
      file,
      "storage:\n  backends:\n    - name: a\n      type: filesystem\n      path: /a\n      encryption:\n        mode: aes256-gcm-proxy\n",
    );
    await assertLoadError(
      loadConfig({ configPath: file, env: { SVC_BACKEND_A_ENCRYPTION_KEY: "XYZ" } }),
      "storage.backends.0.encryption.key",
      "SVC_BACKEND_A_ENCRYPTION_KEY",
    );
    const { config } = await loadConfig({
      configPath: file,
      env: { SVC_BACKEND_A_ENCRYPTION_KEY: KEY_A },
    });
    assert.equal(config.storage.backends[0].encryption?.key, KEY_A);
  });
});

Deno.test("SVC_BOOTSTRAP_PASSWORD_HASH wins over its legacy alias SVC_ADMIN_PASSWORD_HASH", () => {
  const legacy: Doc = {};
  applyEnvironment(legacy, { SVC_ADMIN_PASSWORD_HASH: "old" });
  assert.deepEqual(legacy, { advanced: { bootstrap_password_hash: "old" } });
  const both: Doc = {};
  applyEnvironment(both, { SVC_ADMIN_PASSWORD_HASH: "old", SVC_BOOTSTRAP_PASSWORD_HASH: "new" });
  assert.deepEqual(both, { advanced: { bootstrap_password_hash: "new" } });
});

Deno.test("new advanced variables win over the file through the loader", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.yaml`;
    await Deno.writeTextFile(
      file,
      "advanced:\n  cache_size_mb: 4096\n  tls:\n    enabled: false\n",
    );
    const { config, advisories } = await loadConfig({
      configPath: file,
      env: { SVC_CACHE_MB: "512", SVC_TLS_ENABLED: "true", SVC_UPLOAD_CONCURRENCY: "16" },
    });
    assert.equal(config.advanced.cache_size_mb, 512);
    assert.equal(config.advanced.tls.enabled, true);
    assert.equal(config.advanced.upload_concurrency, 16);
    assert.match(advisories.join("\n"), /cache_size_mb: 512 MB/);
    await assertLoadError(
      loadConfig({ configPath: file, env: { SVC_UPLOAD_CONCURRENCY: "17" } }),
      "advanced.upload_concurrency",
      "SVC_UPLOAD_CONCURRENCY",
    );
  });
});

/**
 * Unit tests of the configuration loader: defaults, YAML values, the file search order (run in a
 * temp directory through the `cwd` option, never by changing the process's directory), the TOML
 * tripwire, `${env:NAME}` placeholders, validation messages with dotted paths, `--listen` and
 * listen-address parsing.
 */
import assert from "node:assert/strict";
import {
  expandPlaceholders,
  findConfigFile,
  loadConfig,
  parseDocument,
  parseListenAddress,
  SEARCH_ORDER,
  TOML_REMOVED_MESSAGE,
} from "./load.ts";
import { ConfigError, validateConfig } from "./schema/schema.ts";

type Patterns = (string | RegExp)[];

function check(err: unknown, patterns: Patterns): true {
  assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
  for (const pattern of patterns) {
    if (typeof pattern === "string") {
      assert.ok(err.message.includes(pattern), `"${pattern}" not in: ${err.message}`);
    } else assert.match(err.message, pattern);
  }
  return true;
}

function assertConfigError(fn: () => unknown, ...patterns: Patterns): void {
  assert.throws(fn, (err: unknown) => check(err, patterns));
}

async function assertLoadError(promise: Promise<unknown>, ...patterns: Patterns): Promise<void> {
  await assert.rejects(promise, (err: unknown) => check(err, patterns));
}

async function withTempDir(test: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-load-test-" });
  try {
    await test(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Loads `yaml` as the `--config` file with the given environment. */
async function loadYaml(yaml: string, env: Record<string, string> = {}) {
  let result!: Awaited<ReturnType<typeof loadConfig>>;
  await withTempDir(async (dir) => {
    const file = `${dir}/config.yaml`;
    await Deno.writeTextFile(file, yaml);
    result = await loadConfig({ configPath: file, env, cwd: dir });
  });
  return result;
}

async function assertYamlError(yaml: string, ...patterns: Patterns): Promise<void> {
  await withTempDir(async (dir) => {
    const file = `${dir}/config.yaml`;
    await Deno.writeTextFile(file, yaml);
    await assertLoadError(loadConfig({ configPath: file, env: {}, cwd: dir }), ...patterns);
  });
}

// --- defaults -----------------------------------------------------------------------------------

Deno.test("the /etc candidates used by the search tests are absent on this machine", async () => {
  for (const candidate of SEARCH_ORDER.filter((c) => c.startsWith("/"))) {
    await assert.rejects(Deno.stat(candidate), Deno.errors.NotFound, candidate);
  }
});

Deno.test("with no file and no environment the defaults apply", async () => {
  await withTempDir(async (dir) => {
    const loaded = await loadConfig({ cwd: dir, env: {} });
    assert.equal(loaded.path, null);
    // Only the advisory the spec gives for the default cache size (under 1024 MB).
    assert.deepEqual(loaded.warnings, loaded.advisories);
    assert.equal(loaded.advisories.length, 1);
    assert.match(loaded.advisories[0], /^advanced\.cache_size_mb: /);
    const { config } = loaded;
    assert.equal(config.advanced.listen_addr, "0.0.0.0:9000");
    assert.equal(config.storage.filesystem, "./data");
    assert.equal(config.storage.backend, undefined);
    assert.equal(config.advanced.max_object_size, 104857600);
    assert.equal(config.advanced.request_timeout_secs, 300);
    assert.equal(config.advanced.max_concurrent_requests, 1024);
    assert.equal(config.advanced.max_multipart_uploads, 1000);
    assert.equal(config.advanced.multipart_idle_ttl_hours, 24);
    assert.equal(config.advanced.debug_headers, false);
    assert.equal(config.advanced.cors_permissive, false);
    assert.equal(config.advanced.trust_proxy_headers, false);
    assert.equal(config.advanced.log_level, undefined);
    assert.equal(config.access.iam_mode, "gui");
    assert.equal(config.access.authentication, undefined);
    assert.equal(config.access.access_key_id, undefined);
    assert.equal(config.access.secret_access_key, undefined);
  });
});

Deno.test("an empty file and a file of comments give the defaults", async () => {
  for (const yaml of ["", "# nothing here\n", "---\n"]) {
    const { config } = await loadYaml(yaml);
    assert.equal(config.advanced.listen_addr, "0.0.0.0:9000", JSON.stringify(yaml));
    assert.equal(config.storage.filesystem, "./data");
  }
});

Deno.test("a section left empty (all fields commented out) is the same as an absent one", async () => {
  const { config } = await loadYaml(
    "access:\n  # access_key_id: x\nstorage:\nadvanced:\n  # listen_addr: 1.2.3.4:5\n",
  );
  assert.equal(config.advanced.listen_addr, "0.0.0.0:9000");
  assert.equal(config.storage.filesystem, "./data");
  assert.equal(config.access.iam_mode, "gui");
});

Deno.test("validateConfig fills defaults for a partial document", () => {
  const config = validateConfig({ advanced: { max_object_size: 7 } });
  assert.equal(config.advanced.max_object_size, 7);
  assert.equal(config.advanced.request_timeout_secs, 300);
  assert.equal(config.access.iam_mode, "gui");
  assert.deepEqual(validateConfig(undefined), validateConfig({}));
  assert.deepEqual(validateConfig(null), validateConfig({}));
});

// --- YAML values --------------------------------------------------------------------------------

Deno.test("values in the YAML file are loaded", async () => {
  const { config, path, warnings, advisories } = await loadYaml(`
access:
  iam_mode: declarative
  authentication: sigv4
  access_key_id: AKIAFILE
  secret_access_key: file-secret
storage:
  filesystem: /srv/objects
advanced:
  listen_addr: 127.0.0.1:9100
  log_level: info
  request_timeout_secs: 60
  max_concurrent_requests: 8
  max_multipart_uploads: 3
  multipart_idle_ttl_hours: 1.5
  max_object_size: 0
  debug_headers: true
  cors_permissive: true
  trust_proxy_headers: true
`);
  assert.match(path ?? "", /config\.yaml$/);
  assert.deepEqual(advisories.map((a) => a.split(":")[0]), ["advanced.cache_size_mb"]);
  // Every setting of this file is built: the warnings are the advisories.
  assert.deepEqual(warnings.map((w) => w.split(":")[0]), ["advanced.cache_size_mb"]);
  assert.deepEqual(config.access, {
    iam_mode: "declarative",
    authentication: "sigv4",
    access_key_id: "AKIAFILE",
    secret_access_key: "file-secret",
  });
  assert.equal(config.storage.filesystem, "/srv/objects");
  assert.deepEqual(config.advanced, {
    listen_addr: "127.0.0.1:9100",
    log_level: "info",
    request_timeout_secs: 60,
    max_concurrent_requests: 8,
    max_connections: 4096,
    header_timeout_secs: 10,
    idle_timeout_secs: 75,
    body_stall_timeout_secs: 30,
    ready_max_slot_wait_secs: 10,
    max_multipart_uploads: 3,
    multipart_idle_ttl_hours: 1.5,
    max_object_size: 0,
    debug_headers: true,
    cors_permissive: true,
    trust_proxy_headers: true,
    clock_skew_seconds: 300,
    replay_window_secs: 600,
    rate_limit_max_attempts: 100,
    rate_limit_window_secs: 300,
    rate_limit_lockout_secs: 600,
    log_format: "text",
    log_ring_size: 2000,
    log_ring_level: "info",
    audit_ring_size: 500,
    ready_timeout_secs: 3,
    ready_retries: 2,
    ready_cache_ttl_secs: 0,
    max_delta_ratio: 0.75,
    cache_size_mb: 100,
    rebuilt_cache_size_mb: 512,
    metadata_cache_mb: 50,
    codec_concurrency: Math.max(16, navigator.hardwareConcurrency * 4),
    codec_timeout_secs: 60,
    config_sync_poll_secs: 300,
    codec_slot_wait_secs: 10,
    blocking_threads: 512,
    max_passthrough_object_size: 64 * 1024 ** 3,
    s3_connect_timeout_secs: 10,
    s3_read_timeout_secs: 60,
    s3_operation_attempt_timeout_secs: 300,
    s3_stall_grace_secs: 30,
    parity_head_concurrency: 15,
    parity_max_objects: 1000000,
    boot_backend_probe: "enforce",
    backend_list_cooldown_secs: 30,
    backend_list_timeout_secs: 5,
    backend_list_fresh_secs: 5,
    stream_copy_threshold: 64 * 1024 ** 2,
    multipart_part_size: 64 * 1024 ** 2,
    upload_concurrency: 4,
    replication_transfers: 4,
    session_ttl_hours: 4,
    secure_cookies: "auto",
    oidc_allow_http_issuers: false,
    tls: { enabled: false },
    event_delivery: {
      outbox: true,
      enabled: false,
      format: "raw",
      webhook_urls: [],
      webhook_headers: {},
      tick_interval: "10s",
      batch_size: 50,
      request_timeout: "5s",
      max_attempts: 8,
      retry_base: "5s",
      retry_max: "5m",
      stale_claim_after: "60s",
      delivered_retention: "24h",
      delivered_max_rows: 10000,
      prune_batch: 100,
      slack_notify_kinds: ["ObjectCreated"],
      slack_include_globs: [],
      slack_exclude_globs: [],
      slack_routes: [],
      slack_api_url: "https://slack.com/api",
    },
    storage_compression: "auto",
    zstd_level: 3,
  });
});

Deno.test("a filesystem backend block is loaded with its defaults and no shorthand", async () => {
  const { config } = await loadYaml(
    "storage:\n  backend:\n    type: filesystem\n    path: /srv/b\n",
  );
  assert.deepEqual(config.storage.backend, {
    type: "filesystem",
    path: "/srv/b",
    region: "us-east-1",
    force_path_style: true,
  });
  assert.equal(config.storage.filesystem, undefined);
});

Deno.test("backend and filesystem together are rejected", async () => {
  await assertYamlError(
    "storage:\n  filesystem: /a\n  backend:\n    type: filesystem\n    path: /b\n",
    "only one of backend / s3 / filesystem",
  );
});

Deno.test("the admission section is validated and filled with defaults", async () => {
  const { config } = await loadYaml("admission:\n  blocks:\n    - name: x\n      action: deny\n");
  assert.deepEqual(config.admission, { blocks: [{ name: "x", match: {}, action: "deny" }] });
  await assertYamlError("admission:\n  blocks:\n    - name: x\n", "admission.blocks.0.action");
});

// --- validation messages ------------------------------------------------------------------------

Deno.test("invalid types are reported with the dotted path", async () => {
  await assertYamlError("advanced:\n  max_object_size: big\n", "advanced.max_object_size");
  await assertYamlError("advanced:\n  max_object_size: -1\n", "advanced.max_object_size");
  await assertYamlError("advanced:\n  max_object_size: 1.5\n", "advanced.max_object_size");
  await assertYamlError("advanced:\n  request_timeout_secs: 0\n", "advanced.request_timeout_secs");
  await assertYamlError("advanced:\n  debug_headers: sometimes\n", "advanced.debug_headers");
  await assertYamlError("advanced:\n  listen_addr: 9000\n", "advanced.listen_addr");
  await assertYamlError("access:\n  iam_mode: ldap\n", "access.iam_mode");
  await assertYamlError("access:\n  access_key_id: ''\n", "access.access_key_id");
  await assertYamlError("storage:\n  backend:\n    type: ftp\n", "storage.backend.type");
  await assertYamlError("storage:\n  filesystem: ''\n", "storage.filesystem", "non-empty");
  await assertYamlError("advanced: 5\n", /^advanced: /);
});

Deno.test("several problems are all listed", () => {
  assertConfigError(
    () =>
      validateConfig({
        advanced: { max_object_size: "x", request_timeout_secs: -3 },
      }),
    "advanced.max_object_size",
    "advanced.request_timeout_secs",
  );
});

Deno.test("'..' components in storage.filesystem are rejected with the path", async () => {
  for (const bad of ["../data", "data/..", "/srv/../etc", "a/../../b", "..", "a\\..\\b"]) {
    await assertYamlError(
      `storage:\n  filesystem: '${bad}'\n`,
      "storage.filesystem",
      '".."',
      bad,
    );
  }
  await assertYamlError(
    "storage:\n  backend:\n    type: filesystem\n    path: ../up\n",
    "storage.backend.path",
    "../up",
  );
});

Deno.test("names that merely contain dots are allowed as paths", async () => {
  for (const good of ["./data", "..data", "data..", "/srv/.../x", "a/.hidden"]) {
    const { config } = await loadYaml(`storage:\n  filesystem: '${good}'\n`);
    assert.equal(config.storage.filesystem, good);
  }
});

Deno.test("a listen_addr that is not host:port fails at load time", async () => {
  await assertYamlError(
    "advanced:\n  listen_addr: 'garbage'\n",
    "advanced.listen_addr",
    "garbage",
  );
  await assertYamlError("advanced:\n  listen_addr: 'host:99999'\n", "advanced.listen_addr");
});

Deno.test("YAML syntax errors and non-mapping documents name the file", async () => {
  await assertYamlError("advanced: [unclosed\n", "config.yaml");
  await assertYamlError("- just\n- a list\n", "config.yaml", "mapping");
  await assertYamlError("a plain scalar\n", "config.yaml", "mapping");
  assertConfigError(() => parseDocument("key: [", "here.yaml"), /^here\.yaml: /);
  assert.deepEqual(parseDocument("", "x"), {});
});

// --- ${env:NAME} placeholders -------------------------------------------------------------------

Deno.test("${env:NAME} placeholders are expanded from the environment", async () => {
  const { config } = await loadYaml(
    `access:
  access_key_id: \${env:MY_KEY}
  secret_access_key: "pre-\${env:MY_SECRET}-\${env:MY_SECRET}"
storage:
  filesystem: \${env:BASE}/objects
`,
    { MY_KEY: "AKIAPLACEHOLDER", MY_SECRET: "s3cr3t", BASE: "/srv" },
  );
  assert.equal(config.access.access_key_id, "AKIAPLACEHOLDER");
  assert.equal(config.access.secret_access_key, "pre-s3cr3t-s3cr3t");
  assert.equal(config.storage.filesystem, "/srv/objects");
});

Deno.test("a missing placeholder variable is an error naming the document path", async () => {
  await assertYamlError(
    "access:\n  secret_access_key: ${env:NOT_SET_ANYWHERE}\n",
    "access.secret_access_key",
    "NOT_SET_ANYWHERE",
  );
  assertConfigError(
    () => expandPlaceholders({ a: { list: ["ok", "${env:GONE}"] } }, {}),
    /^a\.list\[1\]: environment variable "GONE" is not set$/,
  );
  assertConfigError(() => expandPlaceholders("${env:GONE}", {}), /^\(document\): /);
});

Deno.test("placeholder expansion leaves other values and look-alikes alone", () => {
  const env = { X: "1" };
  assert.deepEqual(
    expandPlaceholders(
      { n: 5, b: true, z: null, s: "$X ${X} ${env:} {env:X} ${ENV:X}", l: [1, "${env:X}"] },
      env,
    ),
    { n: 5, b: true, z: null, s: "$X ${X} ${env:} {env:X} ${ENV:X}", l: [1, "1"] },
  );
  // An empty variable is set, so it expands to nothing.
  assert.equal(expandPlaceholders("a${env:E}b", { E: "" }), "ab");
});

Deno.test("values from SVC_* variables are not placeholder-expanded", async () => {
  const { config } = await loadYaml("", { SVC_LOG_LEVEL: "${env:NOPE}" });
  assert.equal(config.advanced.log_level, "${env:NOPE}");
});

// --- search order -------------------------------------------------------------------------------

Deno.test("no candidate in the directory finds nothing", async () => {
  await withTempDir(async (dir) => {
    assert.equal(await findConfigFile({}, dir), null);
  });
});

Deno.test("svc.yaml is found before svc.yml and svc.toml", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.yaml`, "advanced:\n  log_level: from-yaml\n");
    await Deno.writeTextFile(`${dir}/svc.yml`, "advanced:\n  log_level: from-yml\n");
    await Deno.writeTextFile(`${dir}/svc.toml`, "this = 'is toml'\n");
    assert.equal(await findConfigFile({}, dir), `${dir}/svc.yaml`);
    const loaded = await loadConfig({ cwd: dir, env: {} });
    assert.equal(loaded.path, `${dir}/svc.yaml`);
    assert.equal(loaded.config.advanced.log_level, "from-yaml");
  });
});

Deno.test("svc.yml is found when there is no svc.yaml, before svc.toml", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.yml`, "advanced:\n  log_level: from-yml\n");
    await Deno.writeTextFile(`${dir}/svc.toml`, "this = 'is toml'\n");
    const loaded = await loadConfig({ cwd: dir, env: {} });
    assert.equal(loaded.path, `${dir}/svc.yml`);
    assert.equal(loaded.config.advanced.log_level, "from-yml");
  });
});

Deno.test("a svc.toml in the directory stops the load and is never read", async () => {
  await withTempDir(async (dir) => {
    // A directory of that name cannot be read as a file; reading it would give another error.
    await Deno.mkdir(`${dir}/svc.toml`);
    await assertLoadError(
      loadConfig({ cwd: dir, env: {} }),
      "TOML configs are no longer supported",
      "svc.toml",
    );
  });
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.toml`, "[advanced]\nlisten_addr = '1.2.3.4:5'\n");
    await assertLoadError(loadConfig({ cwd: dir, env: {} }), TOML_REMOVED_MESSAGE);
  });
});

Deno.test("TOML given by SVC_CONFIG or --config is refused as well, existing or not", async () => {
  await withTempDir(async (dir) => {
    await assertLoadError(
      loadConfig({ cwd: dir, env: { SVC_CONFIG: `${dir}/absent.toml` } }),
      TOML_REMOVED_MESSAGE,
    );
    await assertLoadError(
      loadConfig({ cwd: dir, env: {}, configPath: `${dir}/Config.TOML` }),
      TOML_REMOVED_MESSAGE,
    );
  });
});

Deno.test("SVC_CONFIG wins over the files in the directory", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.yaml`, "advanced:\n  log_level: from-svc-yaml\n");
    await Deno.writeTextFile(`${dir}/other.yaml`, "advanced:\n  log_level: from-other\n");
    const env = { SVC_CONFIG: `${dir}/other.yaml` };
    assert.equal(await findConfigFile(env, dir), `${dir}/other.yaml`);
    const loaded = await loadConfig({ cwd: dir, env });
    assert.equal(loaded.path, `${dir}/other.yaml`);
    assert.equal(loaded.config.advanced.log_level, "from-other");
  });
});

Deno.test("SVC_CONFIG naming a missing file gives defaults and a warning", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.yaml`, "advanced:\n  log_level: must-not-be-used\n");
    const env = { SVC_CONFIG: `${dir}/missing.yaml` };
    assert.equal(await findConfigFile(env, dir), `${dir}/missing.yaml`);
    const loaded = await loadConfig({ cwd: dir, env });
    assert.equal(loaded.config.advanced.log_level, undefined);
    assert.equal(loaded.config.advanced.listen_addr, "0.0.0.0:9000");
    assert.equal(loaded.path, null, "the document came from the defaults, not a file");
    assert.equal(loaded.warnings.length, 1 + loaded.advisories.length);
    assert.match(loaded.warnings[0], /missing\.yaml/);
    assert.match(loaded.warnings[0], /SVC_CONFIG/);
    assert.match(loaded.warnings[0], /defaults/);
  });
});

Deno.test("a relative SVC_CONFIG or --config is resolved against cwd", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/conf`);
    await Deno.writeTextFile(`${dir}/conf/a.yaml`, "advanced:\n  log_level: rel\n");
    const viaEnv = await loadConfig({ cwd: dir, env: { SVC_CONFIG: "conf/a.yaml" } });
    assert.equal(viaEnv.config.advanced.log_level, "rel");
    const viaFlag = await loadConfig({ cwd: dir, env: {}, configPath: "conf/a.yaml" });
    assert.equal(viaFlag.config.advanced.log_level, "rel");
  });
});

Deno.test("SVC_CONFIG naming something unreadable is an error", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/adir.yaml`);
    await assertLoadError(
      loadConfig({ cwd: dir, env: { SVC_CONFIG: `${dir}/adir.yaml` } }),
      "adir.yaml",
    );
  });
});

Deno.test("--config wins over SVC_CONFIG and the search", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.yaml`, "advanced:\n  log_level: from-svc-yaml\n");
    await Deno.writeTextFile(`${dir}/env.yaml`, "advanced:\n  log_level: from-env\n");
    await Deno.writeTextFile(`${dir}/flag.yaml`, "advanced:\n  log_level: from-flag\n");
    const loaded = await loadConfig({
      cwd: dir,
      env: { SVC_CONFIG: `${dir}/env.yaml` },
      configPath: `${dir}/flag.yaml`,
    });
    assert.equal(loaded.path, `${dir}/flag.yaml`);
    assert.equal(loaded.config.advanced.log_level, "from-flag");
  });
});

Deno.test("--config naming a missing file is an error naming it", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.yaml`, "advanced:\n  log_level: x\n");
    await assertLoadError(
      loadConfig({ cwd: dir, env: {}, configPath: `${dir}/nope.yaml` }),
      "Cannot read config file",
      "nope.yaml",
    );
  });
});

// --- --listen -----------------------------------------------------------------------------------

Deno.test("--listen wins over the file and SVC_LISTEN_ADDR", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.yaml`, "advanced:\n  listen_addr: 1.1.1.1:1111\n");
    const fromFile = await loadConfig({ cwd: dir, env: {} });
    assert.equal(fromFile.config.advanced.listen_addr, "1.1.1.1:1111");
    const fromEnv = await loadConfig({ cwd: dir, env: { SVC_LISTEN_ADDR: "2.2.2.2:2222" } });
    assert.equal(fromEnv.config.advanced.listen_addr, "2.2.2.2:2222");
    const fromFlag = await loadConfig({
      cwd: dir,
      env: { SVC_LISTEN_ADDR: "2.2.2.2:2222" },
      listen: "127.0.0.1:3333",
    });
    assert.equal(fromFlag.config.advanced.listen_addr, "127.0.0.1:3333");
  });
});

Deno.test("a bad --listen fails the load naming the flag", async () => {
  await withTempDir(async (dir) => {
    await assertLoadError(
      loadConfig({ cwd: dir, env: {}, listen: "garbage" }),
      "advanced.listen_addr",
      "--listen",
      "garbage",
    );
  });
});

Deno.test("--listen over an advanced section that is not a mapping is a ConfigError", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/svc.yaml`, "advanced: 42\n");
    await assertLoadError(loadConfig({ cwd: dir, env: {}, listen: "127.0.0.1:1" }), /^advanced/);
  });
});

// --- parseListenAddress -------------------------------------------------------------------------

Deno.test("parseListenAddress splits host:port, [v6]:port and :port", () => {
  assert.deepEqual(parseListenAddress("0.0.0.0:9000"), { hostname: "0.0.0.0", port: 9000 });
  assert.deepEqual(parseListenAddress("127.0.0.1:0"), { hostname: "127.0.0.1", port: 0 });
  assert.deepEqual(parseListenAddress("localhost:65535"), { hostname: "localhost", port: 65535 });
  assert.deepEqual(parseListenAddress("[::1]:9000"), { hostname: "::1", port: 9000 });
  assert.deepEqual(parseListenAddress("[::]:80"), { hostname: "::", port: 80 });
  assert.deepEqual(parseListenAddress(":9000"), { hostname: "0.0.0.0", port: 9000 });
  assert.deepEqual(parseListenAddress("  example.com:443 "), {
    hostname: "example.com",
    port: 443,
  });
});

Deno.test("parseListenAddress rejects junk with a ConfigError naming listen_addr", () => {
  for (
    const junk of [
      "",
      "garbage",
      "9000",
      "host:",
      "host:port",
      "host:65536",
      "host:123456",
      "::1:9000",
      "[::1]",
      "[]:9000",
      "host:-1",
      "host:90 00",
      "a b:80",
      "[::1:9000",
      "[a]b:80",
    ]
  ) {
    assertConfigError(
      () => parseListenAddress(junk),
      "advanced.listen_addr",
      `"${junk}"`,
    );
  }
});

Deno.test("validateConfig names the variable or flag that set a bad path", () => {
  assertConfigError(
    () =>
      validateConfig(
        { advanced: { max_object_size: -1, request_timeout_secs: 0 } },
        new Map([["advanced.max_object_size", "SVC_MAX_OBJECT_SIZE"]]),
      ),
    "advanced.max_object_size (from SVC_MAX_OBJECT_SIZE): ",
    /advanced\.request_timeout_secs: /,
  );
});

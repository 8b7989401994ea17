import assert from "node:assert/strict";
import { getLogger as getTapeLogger } from "@logtape/logtape";
import {
  activeLogging,
  configureLogging,
  currentLogFilter,
  defaultWriter,
  formatJson,
  formatText,
  getLogger,
  type LoggingOptions,
  type LogLevel,
  resetLogging,
  setLogFilter,
} from "./log.ts";

interface Captured {
  lines: Array<{ line: string; level: LogLevel }>;
  text(): string[];
}

/** Configures logging with a capturing writer, runs `body`, and always resets. */
function withLogging(options: LoggingOptions, body: (out: Captured) => void): void {
  const out: Captured = {
    lines: [],
    text: () => out.lines.map((l) => l.line),
  };
  configureLogging({ ...options, write: (line, level) => out.lines.push({ line, level }) });
  try {
    body(out);
  } finally {
    resetLogging();
  }
}

const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

Deno.test("log text format: time, level, target, message, key=value fields", () => {
  const line = formatText({
    time: "2024-01-01T00:00:00.000Z",
    level: "warn",
    target: "svc::auth",
    message: "bad\nsignature",
    fields: { ip: "10.0.0.1", reason: "two words", n: 3, ok: true, empty: "", obj: { a: 1 } },
  });
  assert.equal(
    line,
    '2024-01-01T00:00:00.000Z  WARN svc::auth: bad\\nsignature ip=10.0.0.1 reason="two words" ' +
      'n=3 ok=true empty="" obj={"a":1}',
  );
});

Deno.test("log text format through a logger", () => {
  withLogging({ filter: "trace" }, (out) => {
    getLogger("svc::s3").info("stored {object}", { bucket: "photos", size: 12 });
    assert.equal(out.lines.length, 1);
    const [time, level, target, ...rest] = out.lines[0].line.split(/ +/);
    assert.match(time, TIME);
    assert.equal(level, "INFO");
    assert.equal(target, "svc::s3:");
    assert.equal(rest.join(" "), "stored {object} bucket=photos size=12", "no templating");
  });
});

Deno.test("log json format: one object per line with nested fields", () => {
  withLogging({ filter: "trace", format: "json" }, (out) => {
    getLogger("svc::runtime").warn("not ready", { backend: "fs", attempts: 2 });
    assert.equal(out.lines.length, 1);
    assert.ok(!out.lines[0].line.includes("\n"));
    const parsed = JSON.parse(out.lines[0].line);
    assert.match(parsed.time, TIME);
    delete parsed.time;
    assert.deepEqual(parsed, {
      level: "warn",
      target: "svc::runtime",
      message: "not ready",
      fields: { backend: "fs", attempts: 2 },
    });
  });
  assert.equal(
    formatJson({ time: "t", level: "info", target: "svc", message: "m", fields: {} }),
    '{"time":"t","level":"info","target":"svc","message":"m","fields":{}}',
  );
});

Deno.test("log output: error and warn to stderr, the rest to stdout", () => {
  const seen: string[] = [];
  const { error, log } = console;
  console.error = (line: string) => seen.push(`stderr:${line}`);
  console.log = (line: string) => seen.push(`stdout:${line}`);
  try {
    for (const level of ["error", "warn", "info", "debug", "trace"] as const) {
      defaultWriter(level, level);
    }
  } finally {
    console.error = error;
    console.log = log;
  }
  assert.deepEqual(seen, [
    "stderr:error",
    "stderr:warn",
    "stdout:info",
    "stdout:debug",
    "stdout:trace",
  ]);
});

Deno.test("log filter: directives gate output per target", () => {
  withLogging({ filter: "info,svc::s3=debug" }, (out) => {
    getLogger("svc::s3").debug("s3 debug");
    getLogger("svc::s3::list").debug("s3 child debug");
    getLogger("svc::auth").debug("auth debug");
    getLogger("svc::auth").info("auth info");
    getLogger("svc::s3").trace("s3 trace");
    assert.deepEqual(out.text().map((l) => l.split(": ")[1]), [
      "s3 debug",
      "s3 child debug",
      "auth info",
    ]);
  });
});

Deno.test("log filter: the default shows svc debug lines", () => {
  withLogging({}, (out) => {
    getLogger("svc::s3").debug("shown");
    getLogger("svc::s3").trace("hidden");
    assert.equal(out.lines.length, 1);
    assert.equal(currentLogFilter(), "info,svc=debug");
  });
});

Deno.test("log filter: unknown directives are skipped with one warning", () => {
  withLogging({ filter: "info,bogus,svc::s3=loud" }, (out) => {
    assert.equal(out.lines.length, 1);
    assert.equal(out.lines[0].level, "warn");
    assert.match(out.lines[0].line, /svc::log: ignored log filter directives/);
    assert.match(out.lines[0].line, /ignored="bogus,svc::s3=loud"/);
  });
});

Deno.test("log filter: setLogFilter applies to loggers created earlier", () => {
  const log = getLogger("svc::auth");
  withLogging({ filter: "warn" }, (out) => {
    log.info("before");
    assert.deepEqual(setLogFilter("info"), []);
    log.info("after");
    assert.deepEqual(out.text().map((l) => l.split(": ")[1]), ["after"]);
    assert.equal(currentLogFilter(), "info");
  });
});

Deno.test("log ring: wired as a sink with its own minimum level", () => {
  withLogging({ filter: "error", ringLevel: "info", ringSize: 2 }, (out) => {
    const { logRing } = activeLogging();
    const log = getLogger("svc::s3");
    log.debug("too low for both");
    log.info("ring only");
    log.error("both", { bucket: "b" });
    assert.deepEqual(out.text().map((l) => l.split(": ")[1]), ["both bucket=b"]);
    const entries = logRing.query();
    assert.deepEqual(entries.map((e) => [e.level, e.target, e.message]), [
      ["error", "svc::s3", "both"],
      ["info", "svc::s3", "ring only"],
    ]);
    assert.deepEqual(entries[0].fields, { bucket: "b" });
    assert.match(entries[0].time, TIME);
    log.warn("third");
    assert.equal(logRing.size, 2, "capacity from ringSize");
  });
});

Deno.test("log: secrets are redacted in text, json and the ring", () => {
  const fields = {
    secret_access_key: "wJalrXUtnFEMI",
    password: "hunter2",
    authorization: "AWS4-HMAC-SHA256 Signature=abc",
    token: "tok",
    key: "k3y",
    access_key: "AKIAIOSFODNN7EXAMPLE",
  };
  const leaks = /wJalr|hunter2|Signature=abc|tok"|k3y|AKIAIOSFODNN7EXAMPLE/;
  withLogging({ filter: "info" }, (out) => {
    getLogger("svc::auth").warn("login", fields);
    getTapeLogger(["svc", "direct"]).warning("direct", fields);
    assert.equal(out.lines.length, 2);
    for (const { line } of out.lines) {
      assert.doesNotMatch(line, leaks);
      assert.match(line, / access_key=AKIA\*\*\*\*( |$)/);
      assert.match(line, / password=\[redacted\]/);
    }
    for (const entry of activeLogging().logRing.query()) {
      assert.doesNotMatch(JSON.stringify(entry), leaks);
      assert.equal(entry.fields.access_key, "AKIA****");
    }
  });
  withLogging({ filter: "info", format: "json" }, (out) => {
    getLogger("svc::auth").warn("login", fields);
    assert.doesNotMatch(out.lines[0].line, leaks);
    assert.deepEqual(JSON.parse(out.lines[0].line).fields, {
      secret_access_key: "[redacted]",
      password: "[redacted]",
      authorization: "[redacted]",
      token: "[redacted]",
      key: "[redacted]",
      access_key: "AKIA****",
    });
  });
});

Deno.test("audit ring: events are logged through svc::audit and reach the log ring", () => {
  withLogging({ filter: "info", auditRingSize: 2 }, (out) => {
    const { auditRing, logRing } = activeLogging();
    auditRing.record("auth_failure", { ip: "10.0.0.9", secret: "x" });
    auditRing.record("config_changed", { section: "access" }, "info");
    auditRing.record("lockout", { ip: "10.0.0.9" });
    assert.deepEqual(auditRing.snapshot().map((e) => e.event), ["lockout", "config_changed"]);
    assert.equal(out.lines.length, 3);
    assert.match(
      out.lines[0].line,
      / WARN svc::audit: auth_failure ip=10.0.0.9 secret=\[redacted\]$/,
    );
    assert.equal(out.lines[0].level, "warn");
    assert.equal(out.lines[1].level, "info");
    assert.deepEqual(logRing.query({ target: "svc::audit" }).map((e) => e.message), [
      "lockout",
      "config_changed",
      "auth_failure",
    ]);
  });
});

Deno.test("log: quiet before configuration and after reset; fresh rings each time", () => {
  const lines: string[] = [];
  getLogger("svc::s3").error("unconfigured");
  const first = configureLogging({ filter: "info", write: (line) => lines.push(line) });
  const second = configureLogging({ filter: "info", write: (line) => lines.push(line) });
  assert.notEqual(first.logRing, second.logRing);
  assert.notEqual(first.auditRing, second.auditRing);
  assert.equal(activeLogging().logRing, second.logRing);
  resetLogging();
  getLogger("svc::s3").error("after reset");
  assert.deepEqual(lines, []);
  assert.equal(currentLogFilter(), null);
});

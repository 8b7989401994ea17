import assert from "node:assert/strict";
import { DEFAULT_LOG_FILTER, parseLevel, parseLogFilter, resolveLogLevel } from "./log-level.ts";

Deno.test("log level: RUST_LOG > SVC_LOG_LEVEL > file > --verbose > default", () => {
  const all = {
    env: { RUST_LOG: "error", SVC_LOG_LEVEL: "warn" },
    fileLevel: "info",
    verbose: true,
  };
  assert.equal(resolveLogLevel(all), "error");
  assert.equal(resolveLogLevel({ ...all, env: { SVC_LOG_LEVEL: "warn" } }), "warn");
  assert.equal(resolveLogLevel({ ...all, env: {} }), "info");
  assert.equal(resolveLogLevel({ env: {}, verbose: true }), "trace");
  assert.equal(resolveLogLevel({ env: {} }), DEFAULT_LOG_FILTER);
  assert.equal(resolveLogLevel({ env: {}, verbose: false }), DEFAULT_LOG_FILTER);
});

Deno.test("log level: empty or blank values count as unset", () => {
  assert.equal(
    resolveLogLevel({ env: { RUST_LOG: "", SVC_LOG_LEVEL: "  " }, fileLevel: "info" }),
    "info",
  );
  assert.equal(resolveLogLevel({ env: { RUST_LOG: " debug " } }), "debug");
  assert.equal(resolveLogLevel({ env: {}, fileLevel: "", verbose: true }), "trace");
});

Deno.test("log level: level names, aliases and case", () => {
  assert.equal(parseLevel("DEBUG"), "debug");
  assert.equal(parseLevel("Warning"), "warn");
  assert.equal(parseLevel("fatal"), "error");
  assert.equal(parseLevel("off"), "off");
  assert.equal(parseLevel("verbose"), null);
});

Deno.test("log filter: the default gives svc targets debug and others info", () => {
  const { filter, ignored } = parseLogFilter(DEFAULT_LOG_FILTER);
  assert.deepEqual(ignored, []);
  assert.equal(filter.levelFor("svc::s3"), "debug");
  assert.equal(filter.levelFor("svc"), "debug");
  assert.equal(filter.levelFor("logtape::meta"), "info");
  assert.equal(filter.enabled("svc::auth", "debug"), true);
  assert.equal(filter.enabled("svc::auth", "trace"), false);
});

Deno.test("log filter: a bare level applies to every target", () => {
  const { filter } = parseLogFilter("warn");
  assert.equal(filter.enabled("svc::s3", "warn"), true);
  assert.equal(filter.enabled("svc::s3", "info"), false);
  assert.equal(filter.enabled("anything", "error"), true);
  assert.equal(filter.mostVerbose(), "warn");
});

Deno.test("log filter: target directives, most specific wins, segment-aware", () => {
  const { filter, ignored } = parseLogFilter(
    "info, svc::s3=debug ,svc::s3::multipart=trace,svc=warn",
  );
  assert.deepEqual(ignored, []);
  assert.equal(filter.levelFor("svc::s3"), "debug");
  assert.equal(filter.levelFor("svc::s3::listing"), "debug");
  assert.equal(filter.levelFor("svc::s3::multipart"), "trace");
  assert.equal(filter.levelFor("svc::s3x"), "warn", "svc::s3 does not cover svc::s3x");
  assert.equal(filter.levelFor("svc::auth"), "warn");
  assert.equal(filter.levelFor("other"), "info");
  assert.equal(filter.mostVerbose(), "trace");
});

Deno.test("log filter: later directive for the same target wins; off disables", () => {
  const { filter } = parseLogFilter("svc::auth=debug,svc::auth=error,svc::s3=off");
  assert.equal(filter.levelFor("svc::auth"), "error");
  assert.equal(filter.enabled("svc::s3", "error"), false);
  assert.equal(filter.levelFor("svc::runtime"), "warn", "no bare level: unmatched targets at warn");
});

Deno.test("log filter: a bare svc target means trace", () => {
  const { filter, ignored } = parseLogFilter("info,svc::auth");
  assert.deepEqual(ignored, []);
  assert.equal(filter.levelFor("svc::auth"), "trace");
  assert.equal(filter.levelFor("svc::s3"), "info");
});

Deno.test("log filter: unusable directives are ignored and listed", () => {
  const { filter, ignored } = parseLogFilter("inof,svc::s3=loud,svc[req]=debug,=debug,debug");
  assert.deepEqual(ignored, ["inof", "svc::s3=loud", "svc[req]=debug", "=debug"]);
  assert.equal(filter.levelFor("svc::s3"), "debug");
});

Deno.test("log filter: nothing usable falls back to the default", () => {
  const { filter, ignored } = parseLogFilter("garbage");
  assert.deepEqual(ignored, ["garbage"]);
  assert.equal(filter.levelFor("svc::s3"), "debug");
  assert.equal(filter.levelFor("other"), "info");
});

import assert from "node:assert/strict";
import { type Config, validateConfig } from "../config/schema/schema.ts";
import { type AdmissionRequest, evaluateChain } from "./chain.ts";
import {
  admissionChainSource,
  buildAdmissionChain,
  publicPrefixBlock,
  wholePublicBuckets,
} from "./build.ts";

function request(overrides: Partial<AdmissionRequest>): AdmissionRequest {
  return {
    method: "GET",
    bucket: "dist",
    key: "releases/v1.tar",
    kind: "object-read",
    signed: false,
    clientIp: "192.0.2.7",
    ...overrides,
  };
}

function config(document: unknown): Config {
  return validateConfig(document);
}

Deno.test("the public-prefix block admits anonymous reads of covered keys only", () => {
  const blocks = [publicPrefixBlock("dist", ["releases/"])];
  assert.equal(evaluateChain(blocks, request({}))?.name, "public-prefix:dist");
  assert.equal(evaluateChain(blocks, request({ method: "HEAD" }))?.name, "public-prefix:dist");
  assert.equal(evaluateChain(blocks, request({ key: "releases-internal/x" })), null);
  assert.equal(evaluateChain(blocks, request({ bucket: "other" })), null);
  assert.equal(evaluateChain(blocks, request({ method: "PUT" })), null);
  assert.equal(evaluateChain(blocks, request({ signed: true })), null);
  // A subresource GET (?acl) and bucket-level calls other than listings are not reads.
  assert.equal(evaluateChain(blocks, request({ kind: "other" })), null);
  assert.equal(evaluateChain(blocks, request({ key: null, kind: "other" })), null);
  assert.equal(
    evaluateChain(blocks, request({ key: null, kind: "listing" }))?.name,
    "public-prefix:dist",
  );
});

Deno.test("the chain puts operator blocks before synthesized ones; first match wins", () => {
  const { chain } = buildAdmissionChain(config({
    admission: {
      blocks: [
        { name: "block-bad-net", match: { source_ip_list: ["198.51.100.0/24"] }, action: "deny" },
        {
          name: "maintenance",
          match: { method: ["put"], path_glob: "locked/**" },
          action: { type: "reject", status: 503, message: "Read only for now" },
        },
      ],
    },
    storage: { buckets: { dist: { public_prefixes: ["releases/"] }, site: { public: true } } },
  }));
  assert.deepEqual(chain.blocks.map((b) => b.name), [
    "block-bad-net",
    "maintenance",
    "public-prefix:dist",
    "public-prefix:site",
  ]);
  assert.equal(
    evaluateChain(chain.blocks, request({ clientIp: "198.51.100.9" }))?.name,
    "block-bad-net",
  );
  assert.equal(evaluateChain(chain.blocks, request({}))?.name, "public-prefix:dist");
  const put = request({ method: "PUT", key: "locked/a/b", kind: "other", signed: true });
  assert.deepEqual(evaluateChain(chain.blocks, put)?.action, {
    type: "reject",
    status: 503,
    message: "Read only for now",
  });
  assert.equal(evaluateChain(chain.blocks, { ...put, key: "open/a" }), null);
});

Deno.test("no public-prefix blocks when authentication is off", () => {
  const { chain } = buildAdmissionChain(config({
    access: { authentication: "none" },
    storage: { buckets: { dist: { public_prefixes: ["releases/"] } } },
  }));
  assert.deepEqual(chain.blocks, []);
});

Deno.test("config_flag blocks never match and warn", () => {
  const { chain, warnings } = buildAdmissionChain(config({
    admission: {
      blocks: [{ name: "m", match: { config_flag: "maintenance_mode" }, action: "deny" }],
    },
  }));
  assert.equal(evaluateChain(chain.blocks, request({})), null);
  assert.match(warnings[0], /maintenance_mode/);
});

Deno.test("wholePublicBuckets lists buckets with the empty prefix", () => {
  const c = config({
    storage: { buckets: { site: { public: true }, dist: { public_prefixes: ["r/"] } } },
  });
  assert.deepEqual(wholePublicBuckets(c), ["site"]);
});

Deno.test("admissionChainSource rebuilds the chain when the snapshot changes", () => {
  let current = config({});
  const source = admissionChainSource(() => current);
  const first = source();
  assert.deepEqual(first.blocks, []);
  assert.equal(source(), first, "same snapshot, same chain");
  current = config({ storage: { buckets: { site: { public: true } } } });
  assert.deepEqual(source().blocks.map((b) => b.name), ["public-prefix:site"]);
});

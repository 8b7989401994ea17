import assert from "node:assert/strict";
import { LIBC_NAMES, LIBC_SYMBOLS, loadLibc } from "./libc.ts";
import { loadLibcrypto } from "./libcrypto/libcrypto.ts";
import { nativeComplete, nativeReport } from "./native-report.ts";

Deno.test("the native report names the libraries this process opened", () => {
  const report = nativeReport();
  assert.equal(report.libc, "libc.so.6");
  assert.match(report.libcrypto, /^libcrypto\.so|^missing$/);
  // A reason is given exactly for a library that did not open.
  assert.equal(report.reasons.length, report.libcrypto === "missing" ? 1 : 0);
});

Deno.test("a missing library is reported with every name tried", () => {
  const report = nativeReport(
    loadLibc(["libc-absent.so.9"]),
    loadLibcrypto(["libcrypto-absent.so"]),
  );
  assert.equal(report.libc, "missing");
  assert.equal(report.libcrypto, "missing");
  assert.deepEqual(report.libc_missing, []);
  assert.equal(report.reasons.length, 2);
  assert.match(report.reasons[0], /^libc: "libc-absent\.so\.9": /);
  assert.equal(nativeComplete(report), false);
});

Deno.test("an optional libc function that is absent is reported by name", () => {
  const libc = loadLibc(LIBC_NAMES);
  assert.ok(libc.available);
  const withoutStatx = {
    ...libc,
    symbols: { ...libc.symbols, statx: null } as unknown as typeof libc.symbols,
  };
  const report = nativeReport(withoutStatx);
  assert.deepEqual(report.libc_missing, ["statx"]);
  assert.equal(nativeComplete(report), false);
  assert.ok("optional" in LIBC_SYMBOLS.statx);
});

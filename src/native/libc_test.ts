/**
 * The loaders (dynamic-library.ts through libc.ts and libcrypto.ts): one probe per library at
 * start, a missing library or required symbol as a known state with its reason, a missing
 * optional symbol as null, and no other `dlopen` in src/.
 */
import assert from "node:assert/strict";
import { openLibrary } from "./dynamic-library.ts";
import { errnoReader, LIBC_NAMES, loadLibc, missingSymbolReason, processLibc } from "./libc.ts";
import { LIBCRYPTO_NAMES, loadLibcrypto, processLibcrypto } from "./libcrypto/libcrypto.ts";

const OPTIONAL = ["statx", "getdents64", "renameat2", "mallopt", "gnu_get_libc_version"] as const;

Deno.test({
  name: "processLibc opens with every function svc calls; this glibc has the optional ones too",
  ignore: Deno.build.os !== "linux",
  fn: () => {
    assert.ok(processLibc.available, !processLibc.available ? processLibc.reason : "");
    assert.equal(processLibc.name, "libc.so.6");
    const version = processLibc.symbols.gnu_get_libc_version?.();
    assert.ok(version, "glibc");
    const [major, minor] = new Deno.UnsafePointerView(version).getCString().split(".").map(Number);
    // Every optional function is in glibc 2.30 and later (the oldest Deno supports is older).
    if (major > 2 || minor >= 30) {
      for (const name of OPTIONAL) assert.notEqual(processLibc.symbols[name], null, name);
    }
  },
});

Deno.test("a library that is not there is the unavailable state, naming every name tried", () => {
  const libc = loadLibc(["libc-svc-missing.so.6"]);
  assert.equal(libc.available, false);
  assert.match(!libc.available ? libc.reason : "", /"libc-svc-missing\.so\.6": .*No such file/);
  const libcrypto = loadLibcrypto(["libcrypto-svc-missing.so.3", "libcrypto-svc-missing.so.1.1"]);
  assert.equal(libcrypto.available, false);
  assert.match(
    !libcrypto.available ? libcrypto.reason : "",
    /"libcrypto-svc-missing\.so\.3": .*; "libcrypto-svc-missing\.so\.1\.1": /,
  );
  assert.equal(loadLibc([]).available, false);
});

Deno.test("a library opens under the first name that works", () => {
  const libc = loadLibc(["libc-svc-missing.so.6", ...LIBC_NAMES]);
  try {
    assert.equal(libc.available && libc.name, LIBC_NAMES[0]);
  } finally {
    if (libc.available) libc.close();
  }
  if (processLibcrypto.available) {
    assert.ok(LIBCRYPTO_NAMES.includes(processLibcrypto.name));
  }
});

Deno.test({
  name: "a missing required symbol makes the library unavailable; a missing optional one is null",
  ignore: !processLibc.available,
  fn: () => {
    const required = openLibrary(LIBC_NAMES, {
      svc_no_such_function: { parameters: [], result: "i32" },
    });
    assert.equal(required.available, false);
    assert.match(!required.available ? required.reason : "", /svc_no_such_function/);
    const optional = openLibrary(LIBC_NAMES, {
      getpid: { parameters: [], result: "i32" },
      svc_no_such_function: { parameters: [], result: "i32", optional: true },
    });
    assert.ok(optional.available);
    try {
      assert.equal(optional.symbols.svc_no_such_function, null);
      assert.equal(optional.symbols.getpid(), Deno.pid);
    } finally {
      optional.close();
    }
  },
});

Deno.test({
  name: "errno is read right after the call that failed; a refusal names what is missing",
  ignore: !processLibc.available,
  fn: () => {
    assert.ok(processLibc.available);
    const errno = errnoReader(processLibc.symbols);
    assert.equal(processLibc.symbols.close(-1), -1);
    assert.equal(errno(), 9); // EBADF
    const withoutStatx = { ...processLibc, symbols: { ...processLibc.symbols, statx: null } };
    assert.equal(
      missingSymbolReason(withoutStatx, "statx"),
      "libc.so.6 has no statx (glibc 2.28 or later)",
    );
    assert.match(
      missingSymbolReason(loadLibc(["libc-svc-missing.so.6"]), "statx"),
      /^libc could not be loaded \("libc-svc-missing\.so\.6": /,
    );
  },
});

Deno.test("no Deno.dlopen in src/ but the loader's", async () => {
  const needle = "Deno." + "dlopen(";
  const found: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (path.endsWith(".ts") && (await Deno.readTextFile(path)).includes(needle)) {
        found.push(path.slice(path.indexOf("/src/") + 1));
      }
    }
  };
  await walk(new URL("..", import.meta.url).pathname.replace(/\/$/, ""));
  assert.deepEqual(found.sort(), ["src/native/dynamic-library.ts"]);
});

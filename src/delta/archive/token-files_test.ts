/**
 * Exact round trips of the token form (expandSync/contractFile, what the worker runs): archives
 * made by the producers
 * svc meets (zlib at several levels through node:zlib and Python, fflate, gzip(1), Info-ZIP,
 * Python's zipfile) are expanded, contracted and compared byte for byte with the original.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { deflateRawSync, gzipSync as zlibGzip } from "node:zlib";
import { gzipSync as fflateGzip, zipSync } from "fflate";
import { archiveFormatOf } from "./archive-codec.ts";
import { type ArchiveFormat, contractFile, expandFile } from "./token-files.ts";
import { sample } from "../../testing/archive-samples.ts";

async function roundTrip(format: ArchiveFormat, bytes: Uint8Array, label: string) {
  const dir = await Deno.makeTempDir();
  try {
    const original = `${dir}/in`;
    await Deno.writeFile(original, bytes);
    const expanded = await expandFile(format, original, `${dir}/x`);
    assert.ok(expanded.ok, `${label}: ${JSON.stringify(expanded)}`);
    const rebuilt = await contractFile(`${dir}/x`, `${dir}/out`);
    const back = await Deno.readFile(`${dir}/out`);
    assert.equal(back.length, bytes.length, label);
    assert.ok(back.every((byte, i) => byte === bytes[i]), `${label}: bytes differ`);
    assert.equal(rebuilt.size, bytes.length);
    assert.equal(rebuilt.sha256, createHash("sha256").update(bytes).digest("hex"));
    return expanded;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function tool(cmd: string, args: string[], cwd?: string, stdin?: Uint8Array) {
  try {
    const child = new Deno.Command(cmd, {
      args,
      cwd,
      stdin: stdin ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    if (stdin) {
      const writer = child.stdin.getWriter();
      await writer.write(stdin);
      await writer.close();
    }
    const { code, stdout, stderr } = await child.output();
    if (code !== 0) throw new Error(`${cmd} failed: ${new TextDecoder().decode(stderr)}`);
    return stdout;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}

const text = sample(1, 300_000);
const small = sample(2, 2_000);

Deno.test("archiveFormatOf knows the gzip and zip families by extension", () => {
  assert.equal(archiveFormatOf("a/b/pkg-1.0.TGZ"), "gzip");
  assert.equal(archiveFormatOf("app.tar.gz"), "gzip");
  assert.equal(archiveFormatOf("serde-1.0.0.crate"), "gzip");
  for (const ext of ["zip", "jar", "war", "ear", "whl", "nupkg", "apk", "vsix", "aar"]) {
    assert.equal(archiveFormatOf(`x/lib.${ext.toUpperCase()}`), "zip", ext);
  }
  assert.equal(archiveFormatOf("app.tar"), null);
  assert.equal(archiveFormatOf("dir.zip/readme"), null);
  assert.equal(archiveFormatOf(".gz"), null);
  assert.equal(archiveFormatOf("app.zip.sha256"), null);
});

Deno.test("gzip by node:zlib (levels 0, 1, 6, 9) round trips exactly", async () => {
  for (const level of [0, 1, 6, 9]) {
    const result = await roundTrip("gzip", zlibGzip(text, { level }), `zlib ${level}`);
    assert.ok(result.ok && result.deflateStreams === 1);
  }
});

Deno.test("gzip by fflate (levels 1-9, with a file name) round trips exactly", async () => {
  for (let level = 1; level <= 9; level++) {
    const gz = fflateGzip(text, { level: level as 1, filename: "data.bin", mtime: 0 });
    await roundTrip("gzip", gz, `fflate ${level}`);
  }
});

Deno.test("gzip(1) at -1, -6 and -9 round trips exactly (name and multi-member)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/data.txt`, text);
    const parts: Uint8Array[] = [];
    for (const level of ["-1", "-6", "-9"]) {
      const gz = await tool("gzip", [level, "-c", `${dir}/data.txt`]);
      if (gz === null) return; // no gzip on this machine
      parts.push(gz);
      await roundTrip("gzip", gz, `gzip ${level}`);
    }
    // Members one after another, then zero padding (tape blocks): every member expands.
    const multi = new Uint8Array([...parts[0], ...parts[1], ...parts[2], ...new Uint8Array(512)]);
    const result = await roundTrip("gzip", multi, "multi-member");
    assert.ok(result.ok && result.deflateStreams === 3);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("gzip by Python's zlib round trips exactly (skipped without python3)", async () => {
  for (const level of [1, 6, 9]) {
    const script = "import sys,zlib\n" +
      `c=zlib.compressobj(${level},zlib.DEFLATED,31)\n` +
      "sys.stdout.buffer.write(c.compress(sys.stdin.buffer.read())+c.flush())";
    const gz = await tool("python3", ["-c", script], undefined, text);
    if (gz === null) return;
    await roundTrip("gzip", gz, `python zlib ${level}`);
  }
});

Deno.test("gzip with FEXTRA, FNAME, FCOMMENT and FHCRC round trips exactly", async () => {
  const body = deflateRawSync(small);
  const header = [0x1f, 0x8b, 8, 2 | 4 | 8 | 16, 1, 2, 3, 4, 0, 3, 4, 0, 0xaa, 0xbb, 0xcc, 0xdd];
  const name = [...new TextEncoder().encode("name.txt"), 0];
  const comment = [...new TextEncoder().encode("a comment"), 0];
  const member = [...header, ...name, ...comment, 0x12, 0x34, ...body, 1, 2, 3, 4, 5, 6, 7, 8];
  const result = await roundTrip("gzip", new Uint8Array(member), "all header fields");
  assert.ok(result.ok && result.deflateStreams === 1);
});

Deno.test("empty inputs round trip exactly", async () => {
  const none = await roundTrip("gzip", new Uint8Array(0), "empty file as gzip");
  assert.ok(none.ok && none.deflateStreams === 0);
  await roundTrip("zip", new Uint8Array(0), "empty file as zip");
  const empty = await roundTrip("gzip", zlibGzip(new Uint8Array(0)), "gzip of nothing");
  assert.ok(empty.ok && empty.deflateStreams === 1);
  await roundTrip("gzip", fflateGzip(new Uint8Array(0)), "fflate gzip of nothing");
  await roundTrip("zip", zipSync({ "empty.txt": new Uint8Array(0) }), "zip of an empty member");
});

Deno.test("zip by fflate (deflated and stored members) round trips exactly", async () => {
  const zip = zipSync({
    "a/text.txt": [text, { level: 6 }],
    "a/small.txt": [small, { level: 1 }],
    "b/stored.bin": [small, { level: 0 }],
    "c/fast.txt": [text.subarray(0, 50_000), { level: 9 }],
  });
  const result = await roundTrip("zip", zip, "fflate zip");
  assert.ok(result.ok && result.deflateStreams === 3);
});

Deno.test("zip by Info-ZIP (-1, -9, and to a pipe) round trips exactly", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/tree/sub`, { recursive: true });
    await Deno.writeFile(`${dir}/tree/text.txt`, text);
    await Deno.writeFile(`${dir}/tree/sub/small.txt`, small);
    await Deno.writeFile(`${dir}/tree/sub/empty.txt`, new Uint8Array(0));
    for (const level of ["-1", "-9"]) {
      const out = await tool("zip", ["-q", "-r", level, `${dir}/${level}.zip`, "tree"], dir);
      if (out === null) return; // no zip on this machine
      const result = await roundTrip("zip", await Deno.readFile(`${dir}/${level}.zip`), level);
      assert.ok(result.ok && result.deflateStreams >= 2);
    }
    // Written to a pipe, zip cannot seek back to patch its headers.
    const piped = await tool("zip", ["-q", "-r", "-", "tree"], dir);
    assert.ok(piped !== null);
    const result = await roundTrip("zip", piped, "zip to a pipe");
    assert.ok(result.ok && result.deflateStreams >= 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("zip by Python's zipfile (deflated, stored, descriptors) round trips exactly", async () => {
  const script = "import sys,zipfile\n" +
    "data=sys.stdin.buffer.read()\n" +
    "for seekable in (True, False):\n" +
    "  import io\n" +
    "  buf=io.BytesIO()\n" +
    "  class Pipe(io.RawIOBase):\n" +
    "    def writable(self): return True\n" +
    "    def write(self,b): buf.write(b); return len(b)\n" +
    "  target=buf if seekable else Pipe()\n" +
    "  with zipfile.ZipFile(target,'w') as z:\n" +
    "    z.writestr(zipfile.ZipInfo('d.txt'),data,compress_type=zipfile.ZIP_DEFLATED,compresslevel=9)\n" +
    "    z.writestr('s.bin',data[:5000],compress_type=zipfile.ZIP_STORED)\n" +
    "    with z.open('w.txt','w') as w: w.write(data[:100000])\n" +
    "  sys.stdout.buffer.write(len(buf.getvalue()).to_bytes(4,'little')+buf.getvalue())\n";
  const out = await tool("python3", ["-c", script], undefined, text);
  if (out === null) return;
  const view = new DataView(out.buffer, out.byteOffset);
  const first = view.getUint32(0, true);
  const seekable = out.subarray(4, 4 + first);
  const piped = out.subarray(8 + first);
  await roundTrip("zip", seekable, "zipfile to a file");
  assert.equal(piped[6] & 8, 8, "written to a stream: data descriptors");
  const result = await roundTrip("zip", piped, "zipfile to a stream");
  assert.ok(result.ok && result.deflateStreams >= 1);
});

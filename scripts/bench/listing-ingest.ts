/**
 * Listing a flat prefix while it takes writes (issue 11's listing goal under ingestion): `--keys`
 * files in one directory, then rounds of `--writes` PUTs through the filesystem backend followed
 * by one ListObjects page of 1,000 keys from the middle. A directory that changes without pause
 * is never quiet long enough for its cached listing to be kept by the stamp check alone, so each
 * page read and sorted the whole directory; svc's own changes now patch the cached listing.
 * In process (no HTTP): the page cost is the backend's.
 *
 *   node_modules/.bin/deno run -A scripts/bench/listing-ingest.ts [--keys 100000] [--writes 5]
 *     [--rounds 20] [--svc /path/to/other/checkout] [--dir /tmp/svc-bench-ingest]
 *
 * `--svc` times the backend of another checkout (run with that checkout's deno.json as --config).
 */
const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const keys = Number(arg("--keys", "100000"));
const writes = Number(arg("--writes", "5"));
const rounds = Number(arg("--rounds", "20"));
const root = arg("--svc", new URL("../../", import.meta.url).pathname).replace(/\/?$/, "");
const dir = arg("--dir", "/tmp/svc-bench-ingest");

const { FilesystemBackend } = await import(`${root}/src/storage/fs/filesystem-backend.ts`);
const { setJsonXattr } = await import(`${root}/src/native/xattr.ts`);
const { fakeMeta } = await import(`${root}/src/testing/object-fixtures.ts`);

const name = (n: number) => `${String(n).padStart(8, "0")}.json`;
await Deno.remove(dir, { recursive: true }).catch(() => {});
const backend = await FilesystemBackend.open(dir);
await backend.createBucket("logs");
await Deno.mkdir(`${dir}/logs/x`);
const meta = fakeMeta(0);
for (let i = 0; i < keys; i++) {
  const path = `${dir}/logs/x/${name(i)}`;
  Deno.writeFileSync(path, new Uint8Array());
  setJsonXattr(path, "user.svc.meta", meta);
}
await new Promise((resolve) => setTimeout(resolve, 2700)); // quiet: the first listing is cached
await backend.listObjects("logs", { prefix: "x/", maxKeys: 1000 });
const times: number[] = [];
let next = keys;
for (let round = 0; round < rounds; round++) {
  for (let w = 0; w < writes; w++) {
    const staged = await backend.stageObject(
      "logs",
      `x/${name(next++)}`,
      new Blob(["{}"]).stream(),
    );
    await staged.commit(fakeMeta(2));
  }
  const started = performance.now();
  const page = await backend.listObjects("logs", {
    prefix: "x/",
    maxKeys: 1000,
    startAfter: `x/${name(keys / 2)}`,
  });
  times.push(performance.now() - started);
  if (page.objects.length !== 1000) throw new Error(`A page of ${page.objects.length} keys`);
}
times.sort((a, b) => a - b);
const ms = (value: number) => value.toFixed(1);
console.log(
  `| ${root} | ${keys} | ${writes} | ${ms(times[times.length >> 1])} | ${ms(times[0])}–${
    ms(times.at(-1)!)
  } |`,
);
await Deno.remove(dir, { recursive: true });
Deno.exit(0); // a checkout without retired-files may leave background removals

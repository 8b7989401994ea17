/**
 * The deflate model is part of the storage format (a stored predicted form is rebuilt by running
 * it again): for every parameter set, the proposals on fixed inputs must stay exactly those the
 * model made when the digests below were recorded (sets 0-9 from main `3e73167`, before the speed
 * work).
 * A failure here means stored forms would no longer rebuild: never update a digest to make it
 * pass; add a parameter set instead.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sample } from "../../../testing/archive-samples.ts";
import { DeflateModel, MODEL_PARAMS } from "./deflate-model.ts";

function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
}

function random(seed: number, size: number): Uint8Array {
  const next = lcg(seed);
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = next() >>> 24;
  return out;
}

/** A block repeated with a few mutations: long chains of equally good candidates. */
function mutatedRepeats(seed: number, block: number, size: number): Uint8Array {
  const next = lcg(seed);
  const base = random(seed + 1, block);
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = base[i % block];
  for (let k = 0; k < size / 50; k++) out[next() % size] = next() >>> 24;
  return out;
}

/** Random data repeated after more than the window: matches only within MAX_DIST count. */
function farRepeat(seed: number): Uint8Array {
  const part = random(seed, 40_000);
  const out = new Uint8Array(112_000);
  out.set(part, 0);
  out.set(part.subarray(0, 32_000), part.length);
  out.set(part, 72_000);
  return out;
}

/** Few-symbol text: many hash collisions, runs, matches of every length up to 258. */
function lowEntropy(seed: number, size: number): Uint8Array {
  const next = lcg(seed);
  const out = new Uint8Array(size);
  for (let i = 0; i < size;) {
    const run = next() % 300;
    const byte = 97 + (next() >>> 30);
    for (let r = 0; r < run && i < size; r++) out[i++] = (next() & 7) === 0 ? 98 : byte;
  }
  return out;
}

const INPUTS: [string, Uint8Array][] = [
  ["empty", new Uint8Array(0)],
  ["one", new Uint8Array([7])],
  ["three", new Uint8Array([1, 2, 3])],
  ["five same", new Uint8Array(5).fill(9)],
  ["sample 1", sample(1, 300_000)],
  ["sample 2", sample(2, 70_000)],
  ["zeros", new Uint8Array(100_000)],
  ["random", random(3, 100_000)],
  ["mutated repeats", mutatedRepeats(4, 1_000, 120_000)],
  ["mutated repeats short", mutatedRepeats(5, 37, 50_000)],
  ["far repeat", farRepeat(6)],
  ["low entropy", lowEntropy(7, 150_000)],
];

/**
 * The digest of the model's proposals on `data`, accepting them except at every `every`th, which
 * is forced to something else (a literal for a match, a short match for a literal), as the
 * corrections of a producer the model does not quite describe would.
 */
function proposalDigest(data: Uint8Array, params: number, every: number): string {
  const m = new DeflateModel(data, MODEL_PARAMS[params]);
  const p = m.proposal;
  const hash = createHash("sha256");
  const record = new Int32Array(4096 * 3);
  let filled = 0;
  let k = 0;
  for (;;) {
    const has = m.next();
    if (!has) break;
    record[filled++] = p.at;
    record[filled++] = p.length;
    record[filled++] = p.distance;
    if (filled === record.length) {
      hash.update(new Uint8Array(record.buffer));
      filled = 0;
    }
    k++;
    if (every > 0 && k % every === 0) {
      const length = p.length > 0 ? 0 : (p.at + 5 <= data.length ? 5 : 0);
      m.force(length);
    } else {
      m.accept();
    }
  }
  hash.update(new Uint8Array(record.buffer, 0, filled * 4));
  hash.update(String(k));
  return hash.digest("hex").slice(0, 16);
}

/** Every parameter set on every input, accepted throughout and with forced corrections. */
function allDigests(): string[] {
  const lines: string[] = [];
  for (let params = 0; params < MODEL_PARAMS.length; params++) {
    for (const [name, data] of INPUTS) {
      const digests = [0, 7, 61].map((every) => proposalDigest(data, params, every));
      lines.push(`${params} ${name}: ${digests.join(" ")}`);
    }
  }
  return lines;
}

if (import.meta.main) console.log(allDigests().join("\n")); // how the digests were recorded

const RECORDED = `
0 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
0 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
0 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
0 five same: ba4201610784cc51 ba4201610784cc51 ba4201610784cc51
0 sample 1: 48efcda83909179b 427d8eb45989e19d 4a2edc6381c22b21
0 sample 2: 46698977701d6289 31dd139c4f4a6fc0 10754d0e04173386
0 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
0 random: aa5a840836820400 e3906538b12bae45 247fbb0da184fed9
0 mutated repeats: 4a551dc2f015828d b177e6de230ecba1 9dd18f2c9eef023e
0 mutated repeats short: 1975a968cafaa33b 6c264ba2fb4284ca e304b2c3a8991ae7
0 far repeat: 2befbb8ca2ff89d8 0d4126e25eefe856 45083d4ffa9b7d39
0 low entropy: c904ebeb8bc148d5 a75e797dda56e811 17f9342692e76622
1 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
1 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
1 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
1 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
1 sample 1: df44f76ea0b8cdd9 c4ecf2dc6d80cab9 5e776adb18006233
1 sample 2: 46698977701d6289 31dd139c4f4a6fc0 10754d0e04173386
1 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
1 random: 1e0aac1d855ae091 15fce1de816de57d 2530f27e693626d0
1 mutated repeats: 77948b7a5c642393 25db1baac33a48d7 fb9557fab27f467e
1 mutated repeats short: dbbf777a7fb2fa78 599df90644020a46 090a3bba94969ff9
1 far repeat: 00cc5814d86acddc 2965444d4a8d9303 ca66764efc0e929e
1 low entropy: da515841256a0c4d 1f1bc34b4dbe0e5e c5fcd6941b1daae1
2 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
2 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
2 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
2 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
2 sample 1: bde3a7b00ce17a55 1e45e73c504ac82a b7fd49f106d57580
2 sample 2: 1bc96688cb8d0d2e 9a503b8b48405811 d732ec52ba7f4290
2 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
2 random: 1e0aac1d855ae091 15fce1de816de57d 2530f27e693626d0
2 mutated repeats: f14e21135cb3b887 a6104d00cec3dffc cd3dd80375d2a75f
2 mutated repeats short: 9b0b8d400676c879 cc04873ce04332d8 7cc396fc552119d8
2 far repeat: 00cc5814d86acddc 2965444d4a8d9303 ca66764efc0e929e
2 low entropy: 8e5348c6c54e8254 381a2d0a71fe3972 6545d32247f6ff27
3 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
3 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
3 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
3 five same: ba4201610784cc51 ba4201610784cc51 ba4201610784cc51
3 sample 1: fe791c0f62ff9c62 453ab816bfc72d2e 9cf301773d95fce8
3 sample 2: f57facbb16f9652d 7832201e03bbe133 7de15c202e71ff84
3 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
3 random: aa5a840836820400 e3906538b12bae45 247fbb0da184fed9
3 mutated repeats: 7f02407b5b5eaddb fd8970c5a0d74077 1dd217c92ed23f82
3 mutated repeats short: b15cb5c46da12a7f 7c6930ca888813db aa485c45388c248f
3 far repeat: 2befbb8ca2ff89d8 0d4126e25eefe856 45083d4ffa9b7d39
3 low entropy: dd1f1d0e1060968a 76378fc1bc6e2b0b 4119293f1b4f423d
4 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
4 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
4 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
4 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
4 sample 1: b3eeaee00fe8753b 4272b38682ac3398 b065bdcb9989de34
4 sample 2: acaef1a7165bd995 5057872d73e2bab4 c00c27ed6ff99844
4 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
4 random: 1e0aac1d855ae091 15fce1de816de57d 2530f27e693626d0
4 mutated repeats: 77948b7a5c642393 25db1baac33a48d7 fb9557fab27f467e
4 mutated repeats short: e621995ce339d8aa 95df8ac7b137915a c7e6f16a9f89a43e
4 far repeat: 00cc5814d86acddc 2965444d4a8d9303 ca66764efc0e929e
4 low entropy: 0719dc4648c4c627 d914d50c318d89cb 356dba5e6857c378
5 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
5 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
5 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
5 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
5 sample 1: 208e9055076cb5db 84b508a6bee632f3 90b209fa7e1edaaa
5 sample 2: c38214ec64c1afeb 5b2a5c574cc14c5c 4d75071c7e090168
5 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
5 random: 1e0aac1d855ae091 15fce1de816de57d 2530f27e693626d0
5 mutated repeats: 4d2bb9e8e6680caa 2d8d46dc01802782 d30d7bfa29b49c66
5 mutated repeats short: c6624621f33d8813 4682d252630084d4 7ddd856ebb338aac
5 far repeat: 00cc5814d86acddc 2965444d4a8d9303 ca66764efc0e929e
5 low entropy: 0c642f6fb9425830 3149005e8a0f7bd7 9665b5322de93c1c
6 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
6 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
6 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
6 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
6 sample 1: b077a91bb4f7ce3f a69135faea1b9f8a 9827f1d17280198e
6 sample 2: 9dbdb687894b4cf0 0561664f7365b90d 08db8302e629559c
6 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
6 random: 1e0aac1d855ae091 15fce1de816de57d 2530f27e693626d0
6 mutated repeats: 6c6af2af73ef920d de4cff4bb6c3ad95 ce1f65c639020c1a
6 mutated repeats short: b643b6652cd8ba8f 4771df8fbde3951e 08b257d7a9100420
6 far repeat: 00cc5814d86acddc 2965444d4a8d9303 ca66764efc0e929e
6 low entropy: afacad783db1eaea 16bc5af3534cbaf7 505363c4edbf109d
7 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
7 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
7 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
7 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
7 sample 1: 6fdc4970f86f4d1d 271bdd211bde9ec4 bcbad84e57dc33d7
7 sample 2: 65d1238256ea5809 4b4c1c495256b6ef 3754077f77b6d9e3
7 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
7 random: 1e0aac1d855ae091 15fce1de816de57d 2530f27e693626d0
7 mutated repeats: 5b4fed62188978c4 80cd3f5c319e5c71 dc10577ef950688c
7 mutated repeats short: e290bfbfa6e20742 3c078d4f712af494 2320ce8901045fa2
7 far repeat: 00cc5814d86acddc 2965444d4a8d9303 ca66764efc0e929e
7 low entropy: 1fcaa0479b4eeb56 9b810a64e8ec2b79 bece28c39e05079a
8 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
8 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
8 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
8 five same: ba4201610784cc51 ba4201610784cc51 ba4201610784cc51
8 sample 1: fe503bd70a89e912 4507368a2fceb876 7d0d8ea2c602f8a3
8 sample 2: 592716dd612964a5 ce8b6d1d05934f35 a08a0e0e317e5672
8 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
8 random: aa5a840836820400 e3906538b12bae45 247fbb0da184fed9
8 mutated repeats: 4a551dc2f015828d b177e6de230ecba1 9dd18f2c9eef023e
8 mutated repeats short: e77027a00f02bac4 e8ee1af0b2efdc97 9315cfc2052a8f37
8 far repeat: 2befbb8ca2ff89d8 0d4126e25eefe856 45083d4ffa9b7d39
8 low entropy: 8e6fc83aa632f0ef 8883abb83470cf28 b575d28764027583
9 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
9 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
9 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
9 five same: ba4201610784cc51 ba4201610784cc51 ba4201610784cc51
9 sample 1: 409004a8c9bb559d 2bb7289322257a91 43c88af16d200a22
9 sample 2: 062decdacfcd4548 8b342830aa7454c6 75f5605ca431791b
9 zeros: 22af1648b798eb4e 7b58138cfee7a8fe 40444a1feb81c9e9
9 random: aa5a840836820400 e3906538b12bae45 247fbb0da184fed9
9 mutated repeats: 60f2e0b190cd0467 aac9d0383c721a19 75458d2420e49a57
9 mutated repeats short: 4677e690182d2881 1c02ab8e27e66405 91e03f0d59f18774
9 far repeat: 2befbb8ca2ff89d8 0d4126e25eefe856 45083d4ffa9b7d39
9 low entropy: 2d6c241d946bd836 c4d23099beafed03 0e2f2d05381f18cc
`.trim().split("\n");

/** Sets 10-12 (zlib's levels 1-3), recorded when they were added (branch `predict-speed`). */
const RECORDED_FAST = `
10 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
10 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
10 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
10 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
10 sample 1: 585e1a7060bf98d9 20e3856181b6ef55 1397acbae9196983
10 sample 2: 16eea18d7fd7a4f6 6b70327365a66f28 86008d0f98e0bd06
10 zeros: a7b4401f14d85f40 598cbe56132c407f 4a1a5e58aba8f642
10 random: f315dc41dd4cc3d4 140afc9e35366958 7d2ff2249163e37c
10 mutated repeats: df9865475a1deb0e 6fb70754ca2a0a90 0241fd3e6395f2da
10 mutated repeats short: 96a5a33afaf3dd4c 71c30f62418cddf5 9c92572707c7efec
10 far repeat: 12d44ce484de30f8 7e29ff2697338cb6 297765379a7ab800
10 low entropy: ed547a2502ac16ab 8f3f75c15b4ed80c 486cf20804e42351
11 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
11 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
11 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
11 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
11 sample 1: b044e1ad6df59d92 eb886298fae7e4a9 d4692b4675d2cbb7
11 sample 2: ee23b67b91026607 a54d881c4a05a19a a87efdaa3fd580a4
11 zeros: a7b4401f14d85f40 598cbe56132c407f 4a1a5e58aba8f642
11 random: eb9506e706a1d9eb af0e98d7b3ca8223 57a4347397105afc
11 mutated repeats: 1f2d8e1ed8fa3e44 b9d223976f6a5b82 2787d2d230d34e93
11 mutated repeats short: 3350094998e9e8e4 38bddf14505284f3 b9ed912e630f38ce
11 far repeat: 00fb1ee7ee65fed4 463b175b4fd3dfd1 9c3cd434559516d7
11 low entropy: 13f5b9e55f2ec867 136d941cccce638c d3430b47c3526481
12 empty: 5feceb66ffc86f38 5feceb66ffc86f38 5feceb66ffc86f38
12 one: f17489ae353a5043 f17489ae353a5043 f17489ae353a5043
12 three: 82921d51af13f01c 82921d51af13f01c 82921d51af13f01c
12 five same: 3c19d717a73101c1 3c19d717a73101c1 3c19d717a73101c1
12 sample 1: a57231cf59d5f364 2fc198cee315d7a1 9c6f206a6f970c64
12 sample 2: 52d530e3ddfb4278 fd90623b034b4a91 aad3e7b81f887d06
12 zeros: a7b4401f14d85f40 598cbe56132c407f 4a1a5e58aba8f642
12 random: eb9506e706a1d9eb af0e98d7b3ca8223 57a4347397105afc
12 mutated repeats: c20c64ea2163ad30 6d2b673d83247e78 a8f1df1f417033af
12 mutated repeats short: 4d6137df442571b3 d8bb8fdd683b9be3 d432a36a6c544e03
12 far repeat: 00fb1ee7ee65fed4 463b175b4fd3dfd1 9c3cd434559516d7
12 low entropy: da7b9d4b6847977e 19f7db0fbff96d24 c6fcb2a744cd921e
`.trim().split("\n");

Deno.test("every parameter set proposes exactly what it proposed when the format was made", () => {
  const digests = allDigests();
  const recorded = [...RECORDED, ...RECORDED_FAST];
  assert.equal(RECORDED.length, INPUTS.length * 10, "digests for parameter sets 0-9");
  assert.equal(digests.length, recorded.length, "a digest for every parameter set");
  for (let i = 0; i < recorded.length; i++) assert.equal(digests[i], recorded[i]);
});

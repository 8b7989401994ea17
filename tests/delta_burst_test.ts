/**
 * Black-box tests of bursts of delta-eligible uploads (issue 12 item 5: `aws s3 sync` of a
 * release folder sends many archives at once). A write is never refused because every codec slot
 * is busy: a PUT waits up to `codec_slot_wait_secs` for a slot, then stores the object
 * passthrough and counts it as `svc_delta_decisions_total{decision="passthrough",reason="codec_busy"}`.
 */
import assert from "node:assert/strict";
import { signedFetch as fetch, startSvc, type SvcProcess } from "./helpers/svc.ts";
import { ArtifactSeries } from "./helpers/tar.ts";
import { fakeXdelta3Dir, layoutOf, parentDeltaspaceArgs, sha256Hex } from "./helpers/delta.ts";

const BUCKET = "burst";
/** Generous: on a loaded 2-core box queued encodes can take minutes (the request limit is 300 s). */
const HANG_MS = 280_000;

async function started(env: Record<string, string>): Promise<SvcProcess> {
  // Markers of `auto` groups are stored objects too: the layout counted here is the parent rule's.
  const svc = await startSvc({ env, args: parentDeltaspaceArgs(BUCKET) });
  const res = await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" });
  assert.equal(res.status, 200, await res.text());
  return svc;
}

const put = (svc: SvcProcess, key: string, body: Uint8Array<ArrayBuffer>) =>
  fetch(`${svc.url}/${BUCKET}/${key}`, {
    method: "PUT",
    body,
    signal: AbortSignal.timeout(HANG_MS),
  });

/** PUTs every version at once; asserts every one succeeded, then that each reads back exactly. */
async function burst(svc: SvcProcess, versions: Map<string, Uint8Array<ArrayBuffer>>) {
  const answers = await Promise.all(
    [...versions].map(async ([key, body]) => {
      const res = await put(svc, key, body);
      return `${key}: ${res.status} ${res.status === 200 ? "" : await res.text()}`.trim();
    }),
  );
  const failed = answers.filter((a) => !a.endsWith(": 200"));
  assert.deepEqual(failed, [], `${failed.length} of ${versions.size} PUTs failed`);
  for (const [key, body] of versions) {
    const res = await fetch(`${svc.url}/${BUCKET}/${key}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    assert.equal(res.status, 200, key);
    assert.equal(sha256Hex(bytes), sha256Hex(body), `${key}: wrong bytes`);
  }
}

/** `svc_delta_decisions_total` samples as `decision/reason` → count. */
async function decisions(svc: SvcProcess): Promise<Record<string, number>> {
  const text = await (await fetch(`${svc.url}/_/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^svc_delta_decisions_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries(
      [...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]),
    );
    out[`${labels.decision}/${labels.reason}`] = Number(m[2]);
  }
  return out;
}

/** The versions of one series after its baseline, under `space/`. */
function laterVersions(series: ArtifactSeries, space: string, count: number) {
  const versions = new Map<string, Uint8Array<ArrayBuffer>>();
  for (let i = 2; i < count + 2; i++) versions.set(`${space}/v${i}.tar`, series.next());
  return versions;
}

Deno.test("delta burst: 30 concurrent eligible PUTs with two codec slots all succeed as deltas", async () => {
  // Two slots, and a wait long enough for the queue: every PUT waits its turn and gets a delta.
  await using svc = await started({ SVC_CODEC_CONCURRENCY: "2", SVC_CODEC_SLOT_WAIT_SECS: "270" });
  const series = new ArtifactSeries(4, 64 * 1024);
  const first = await put(svc, "rel/v1.tar", series.current());
  assert.equal(first.status, 200, await first.text());
  const versions = laterVersions(series, "rel", 30);
  await burst(svc, versions);
  const layout = layoutOf(svc.dataDir, BUCKET);
  assert.equal(layout.filter((l) => l.endsWith(".tar.delta:delta")).length, 31, layout.join("\n"));
  assert.deepEqual(await decisions(svc), { "reference/new_baseline": 1, "delta/ratio_met": 30 });
});

Deno.test("delta burst: PUTs that find no codec slot within the wait are stored passthrough", async () => {
  // Every encode takes 3 s and there is one slot; PUTs wait at most 0.5 s for it.
  const fake = await fakeXdelta3Dir({ encode: "slow", seconds: 3 });
  try {
    await using svc = await started({
      PATH: `${fake}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      SVC_CODEC_CONCURRENCY: "1",
      SVC_CODEC_SLOT_WAIT_SECS: "0.5",
      SVC_CODEC_TIMEOUT_SECS: "30",
    });
    const series = new ArtifactSeries(4, 64 * 1024);
    const first = await put(svc, "rel/v1.tar", series.current());
    assert.equal(first.status, 200, await first.text());
    // Also a new deltaspace: its first object needs a slot for the baseline's self-delta too.
    const versions = laterVersions(series, "rel", 24);
    versions.set("other/v1.tar", new ArtifactSeries(2, 64 * 1024).current());
    const begun = Date.now();
    await burst(svc, versions);
    assert.ok(Date.now() - begun < 60_000, "the burst took as long as encoding it all serially");
    const counted = await decisions(svc);
    const busy = counted["passthrough/codec_busy"] ?? 0;
    assert.ok(busy >= 20, `expected most PUTs counted as codec_busy: ${JSON.stringify(counted)}`);
    const total = Object.values(counted).reduce((a, b) => a + b, 0);
    assert.equal(total, 1 + versions.size, JSON.stringify(counted));
    const passthrough = layoutOf(svc.dataDir, BUCKET).filter((l) => l.endsWith(":passthrough"));
    assert.equal(passthrough.length, busy);
  } finally {
    await Deno.remove(fake, { recursive: true });
  }
});

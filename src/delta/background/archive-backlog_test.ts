/**
 * The archive backlog: entries are on disk before add returns and survive a reopen, a key's newer
 * write replaces its older entry, conversions run oldest first, a `retry` outcome is tried again
 * and every other outcome removes the entry.
 */
import assert from "node:assert/strict";
import { ArchiveBacklog } from "./archive-backlog.ts";
import type { ConvertOutcome, PendingArchive } from "./archive-convert.ts";

const pending = (key: string, writtenAt: number): PendingArchive => ({
  bucket: "b",
  key,
  sha256: "0".repeat(64),
  writtenAt: String(writtenAt),
});

async function filesIn(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

Deno.test("archive backlog: entries survive a restart; a key keeps its newest write only", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-backlog-" });
  try {
    const never = () => Promise.resolve<ConvertOutcome>("retry");
    const first = await ArchiveBacklog.open(dir, never);
    await first.add(pending("a.tgz", 1));
    await first.add(pending("b.zip", 2));
    await first.add(pending("a.tgz", 3)); // an overwrite of a.tgz before its conversion
    assert.equal(first.size, 2);
    assert.equal((await filesIn(dir)).length, 2, "one file per waiting write");
    await Deno.writeTextFile(`${dir}/leftover.tmp`, "{"); // an interrupted add

    const seen: PendingArchive[] = [];
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => release = resolve);
    const again = await ArchiveBacklog.open(dir, async (p) => {
      seen.push(p);
      if (seen.length === 1) return "retry"; // tried again later
      if (seen.length === 3) await blocked;
      return "converted";
    });
    assert.equal(again.size, 2);
    assert.deepEqual(await filesIn(dir).then((n) => n.filter((f) => f.endsWith(".tmp"))), []);
    again.start();
    const deadline = Date.now() + 10_000;
    while (seen.length < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    release();
    while (again.size > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await again.stop();
    assert.equal(again.size, 0, "every entry converted");
    assert.deepEqual(
      seen.map((p) => `${p.key}@${p.writtenAt}`),
      ["b.zip@2", "a.tgz@3", "b.zip@2"],
      "oldest first (the older write of a.tgz is gone), the retried one again",
    );
    assert.deepEqual(await filesIn(dir), [], "done entries are removed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

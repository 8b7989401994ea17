/**
 * Black-box test of replication into a full disk (issue 27 item 2), on a real full filesystem:
 * the server's data directory (objects and config database) is a small tmpfs filled up behind
 * its back. Run-now answers 507 InsufficientStorage naming the cause, not a 500; the rule's lease
 * is not left behind, so once space is freed a second run-now works at once (no `lease_ttl`
 * wait) and copies everything.
 *
 * Needs root (or CAP_SYS_ADMIN) to mount a tmpfs, and user xattrs on tmpfs (Linux 6.6+); skips
 * cleanly otherwise.
 */
import assert from "node:assert/strict";
import { AdminClient } from "./helpers/admin.ts";
import { objectsOnLocalDisk, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { fill, mountTmpfs, unmount } from "./helpers/tmpfs.ts";

const probe = objectsOnLocalDisk ? await mountTmpfs("1m", "svc-repl-full-") : null;
if (probe) await unmount(probe);

const COUNT = 150;
const RESERVE = 256 * 1024;

const CONFIG = {
  storage: {
    replication: {
      enabled: true,
      tick_interval: "1h",
      rules: [{
        name: "mirror",
        enabled: false,
        source: { bucket: "src" },
        destination: { bucket: "dst" },
      }],
    },
  },
};

Deno.test({
  name: "replication into a full disk: 507, and a second run-now works as soon as space is freed",
  ignore: probe === null,
  fn: async () => {
    const mnt = (await mountTmpfs("16m", "svc-repl-full-"))!;
    const confDir = await Deno.makeTempDir({ prefix: "svc-repl-full-conf-" });
    try {
      await Deno.writeTextFile(`${confDir}/svc.yaml`, JSON.stringify(CONFIG));
      await using svc = await startSvc({
        dataDir: mnt,
        env: { SVC_CONFIG: `${confDir}/svc.yaml` },
      });
      for (const bucket of ["src", "dst"]) {
        assert.equal((await fetch(`${svc.url}/${bucket}`, { method: "PUT" })).status, 200);
      }
      // Small objects fill the disk to its last block: the copy that fails leaves no room for
      // the run's own bookkeeping in the config database either (SQLITE_FULL).
      const body = new Uint8Array(4096).fill(3);
      for (let i = 0; i < COUNT; i++) {
        const response = await fetch(`${svc.url}/src/k${i}`, { method: "PUT", body });
        assert.equal(response.status, 200, await response.text());
      }
      const admin = new AdminClient(svc.url);
      await admin.login();

      // Full, but for a reserve of room for the lease and a few copies: the run starts, then
      // fills the disk itself.
      Deno.writeFileSync(`${mnt}/.reserve`, new Uint8Array(RESERVE));
      fill(`${mnt}/.filler`, 4096);
      Deno.removeSync(`${mnt}/.reserve`);
      const full = await admin.request("POST", "/jobs/replication:mirror/run-now");
      const refused = await full.json();
      assert.equal(full.status, 507, JSON.stringify(refused));
      assert.match(String(refused.message), /disk is full/i, JSON.stringify(refused));

      Deno.removeSync(`${mnt}/.filler`);
      const again = await admin.request("POST", "/jobs/replication:mirror/run-now");
      const report = await again.json();
      assert.equal(again.status, 200, JSON.stringify(report));
      assert.equal(report.status, "succeeded", JSON.stringify(report));
      for (let i = 0; i < COUNT; i++) {
        const copied = await fetch(`${svc.url}/dst/k${i}`);
        assert.equal((await copied.arrayBuffer()).byteLength, body.length, `dst/k${i}`);
      }
    } finally {
      await unmount(mnt);
      await Deno.remove(confDir, { recursive: true }).catch(() => {});
    }
  },
});

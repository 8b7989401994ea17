/**
 * The committed bundle module must be what ui/ builds to now: rebuilt in memory with the pinned
 * esbuild (deterministic output) and compared byte for byte. A UI change without
 * `deno run --allow-all scripts/build-ui.ts` fails here.
 */
import assert from "node:assert/strict";
import { buildUi, GENERATED_MODULE } from "../../scripts/build-ui.ts";

Deno.test({
  name: "ui assets: src/ui/ui-assets.generated.ts is up to date with ui/",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const built = await buildUi();
    const committed = await Deno.readTextFile(GENERATED_MODULE);
    assert.ok(
      committed === built.moduleText,
      "src/ui/ui-assets.generated.ts is stale: run node_modules/.bin/deno run --allow-all " +
        "scripts/build-ui.ts and commit the result",
    );
    // Sized as promised in docs/BENCHMARKS.md: the app (charts included) well under 150 KB gzip.
    const gzip = Object.values(built.sizes).reduce((sum, s) => sum + s.gzip, 0);
    assert.ok(gzip < 150 * 1024, `bundle is ${gzip} bytes gzip`);
  },
});

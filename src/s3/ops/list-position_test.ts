import assert from "node:assert/strict";
import { looksSealed, openPosition, sealPosition } from "./list-position.ts";

Deno.test("sealed positions: round trip, never in clear, refused when altered", () => {
  for (const position of ["b/00042.hidden", "ü/\u{10FFFF}", "x"]) {
    const sealed = sealPosition(position);
    assert.ok(looksSealed(sealed), sealed);
    assert.equal(openPosition(sealed), position);
    assert.ok(!sealed.includes("hidden"));
    // Each seal is fresh (random IV): equal positions do not give equal tokens.
    assert.notEqual(sealPosition(position), sealed);
    const altered = sealed.slice(0, -2) + (sealed.endsWith("AA") ? "BB" : "AA");
    assert.equal(openPosition(altered), undefined);
  }
  // Keys and plain tokens are not sealed positions.
  for (const text of ["svc1.txt", "svc1.", "home/alice/1.txt", "aG9tZS9h"]) {
    assert.equal(looksSealed(text), false, text);
    assert.equal(openPosition(text), undefined);
  }
});

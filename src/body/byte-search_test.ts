import assert from "node:assert/strict";
import { indexOf, partialDelimiterAtEnd } from "./byte-search.ts";

const utf8 = new TextEncoder();

Deno.test("indexOf finds byte sequences", () => {
  const hay = utf8.encode("ab\r\n-\r\n--x\r\n--xy");
  assert.equal(indexOf(hay, utf8.encode("\r\n--x")), 5);
  assert.equal(indexOf(hay, utf8.encode("\r\n--x"), 6), 10);
  assert.equal(indexOf(hay, utf8.encode("\r\n--xyz")), -1);
  assert.equal(indexOf(new Uint8Array(0), utf8.encode("a")), -1);
});

Deno.test("partialDelimiterAtEnd finds a tail that may start the delimiter", () => {
  const delimiter = utf8.encode("\r\n--abc");
  const held = (text: string) => partialDelimiterAtEnd(utf8.encode(text), delimiter);
  assert.equal(held("data"), 0);
  assert.equal(held("data\r"), 1);
  assert.equal(held("data\r\n-"), 3);
  assert.equal(held("data\r\n--ab"), 6);
  assert.equal(held("\r\n--ab"), 6);
  assert.equal(held("data\r\n-x"), 0);
  assert.equal(held("\r\r"), 1);
  assert.equal(held("\r\n\r\n-"), 3);
  assert.equal(held(""), 0);
});

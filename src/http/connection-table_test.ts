import assert from "node:assert/strict";
import {
  type ConnectionLimits,
  ConnectionTable,
  type TrackedConnection,
} from "./connection-table.ts";

function connection(table: ConnectionTable, now: number, closed: string[], name: string) {
  const tracked: TrackedConnection = {
    inFlight: 0,
    served: 0,
    idleSince: now,
    closing: false,
    closeWhenIdle: false,
    close: () => closed.push(name),
  };
  table.add(tracked);
  return tracked;
}

const limits: ConnectionLimits = { maxConnections: 3, headerTimeoutMs: 1000, idleTimeoutMs: 5000 };

Deno.test("room is made by closing the connection idle longest, never a busy one", () => {
  let clock = 0;
  const table = new ConnectionTable(() => clock);
  const closed: string[] = [];
  const a = connection(table, clock, closed, "a");
  const b = connection(table, clock, closed, "b");
  const c = connection(table, clock, closed, "c");
  table.requestStarted(a); // a is busy
  clock = 10;
  table.requestStarted(b);
  table.requestEnded(b); // b active most recently
  assert.equal(table.makeRoom(3), true);
  assert.deepEqual(closed, ["c"]); // a busy, c idle longest
  table.remove(c);
  table.requestStarted(b);
  connection(table, clock, closed, "d");
  table.requestStarted(table.all()[2]);
  assert.equal(table.makeRoom(3), false, "all three busy: the new one is refused");
  assert.equal(table.closed.capacity, 1);
});

Deno.test("a new connection gets the head deadline, a used one the idle timeout", () => {
  let clock = 0;
  const table = new ConnectionTable(() => clock);
  const closed: string[] = [];
  connection(table, clock, closed, "fresh");
  const used = connection(table, clock, closed, "used");
  table.requestStarted(used);
  table.requestEnded(used);
  clock = 1500;
  table.sweep(limits);
  assert.deepEqual(closed, ["fresh"]);
  clock = 4900;
  table.sweep(limits);
  assert.deepEqual(closed, ["fresh"]);
  clock = 5000;
  table.sweep(limits);
  assert.deepEqual(closed, ["fresh", "used"]);
  assert.deepEqual([table.closed.header_timeout, table.closed.idle_timeout], [1, 1]);
});

Deno.test("a connection marked to close when idle closes after its last answer", () => {
  const table = new ConnectionTable(() => 0);
  const closed: string[] = [];
  const tracked = connection(table, 0, closed, "x");
  table.requestStarted(tracked);
  tracked.closeWhenIdle = true;
  assert.deepEqual(closed, []);
  table.requestEnded(tracked);
  assert.deepEqual(closed, ["x"]);
  assert.equal(table.size, 0, "a closing connection no longer counts");
  table.remove(tracked);
  assert.equal(table.size, 0);
});

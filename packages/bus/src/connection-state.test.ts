import assert from "node:assert/strict";
import { test } from "node:test";
import type { Status } from "@nats-io/nats-core";
import { ConnectionStates, type ConnectionState } from "./connection-state.js";

const at = (s: number): Date => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
const disconnect = (server: string): Status => ({ type: "disconnect", server });
const reconnect = (server: string): Status => ({ type: "reconnect", server });

test("the state moves connected → away → connected, counting the return and its outage", () => {
  const states = new ConnectionStates("a:4222", () => undefined, at(0));
  const told: [ConnectionState, ConnectionState][] = [];
  states.onChange((now, before) => told.push([now, before]));
  states.apply(disconnect("a:4222"), at(5));
  // The client says disconnect again for a failed attempt while away: no change.
  states.apply(disconnect("a:4222"), at(6));
  states.apply({ type: "reconnecting" }, at(7));
  states.apply(reconnect("b:4222"), at(9));
  assert.deepEqual(
    told.map(([now]) => now),
    [
      { status: "away", server: "a:4222", since: at(5).toISOString(), returns: 0 },
      {
        status: "connected",
        server: "b:4222",
        since: at(9).toISOString(),
        returns: 1,
        lastOutage: { lost: at(5).toISOString(), back: at(9).toISOString() },
      },
    ],
  );
  assert.equal(told[1]?.[1].status, "away");
  assert.deepEqual(states.value, told[1]?.[0]);
});

test("a reconnect while connected is no change; closed is told once and ends listening", () => {
  const states = new ConnectionStates("a:4222", () => undefined, at(0));
  const told: string[] = [];
  states.onChange((now) => told.push(now.status));
  states.apply(reconnect("a:4222"), at(1));
  states.close(at(2));
  states.close(at(3));
  states.apply(disconnect("a:4222"), at(4));
  assert.deepEqual(told, ["closed"]);
  assert.equal(states.value.status, "closed");
  assert.equal(states.value.since, at(2).toISOString());
});

test("a listener is told until its signal aborts or it is turned off; one that throws is said", () => {
  const errors: unknown[] = [];
  const states = new ConnectionStates("a:4222", (e) => errors.push(e), at(0));
  const stop = new AbortController();
  const bySignal: string[] = [];
  const byOff: string[] = [];
  states.onChange((now) => bySignal.push(now.status), { signal: stop.signal });
  const off = states.onChange((now) => byOff.push(now.status));
  states.onChange(() => {
    throw new Error("broken follower");
  });
  states.apply(disconnect("a:4222"), at(1));
  stop.abort();
  off();
  states.apply(reconnect("a:4222"), at(2));
  assert.deepEqual(bySignal, ["away"]);
  assert.deepEqual(byOff, ["away"]);
  assert.equal(errors.length, 2, "the throwing listener was said at each change, and kept");
  const aborted = new AbortController();
  aborted.abort();
  const late: string[] = [];
  states.onChange((now) => late.push(now.status), { signal: aborted.signal });
  states.apply(disconnect("a:4222"), at(3));
  assert.deepEqual(late, []);
});

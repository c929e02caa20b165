import assert from "node:assert/strict";
import { test } from "node:test";
import { createLogger, loggerFrom } from "./logger.js";

test("logger: table of names and lines", () => {
  const rows: { name?: string; children: string[]; line: string; said: string; full: string }[] = [
    { children: [], line: "up", said: "up", full: "" },
    { name: "mesh-host", children: [], line: "up", said: "mesh-host: up", full: "mesh-host" },
    {
      name: "mesh-host",
      children: ["supervisor", "app"],
      line: "exited",
      said: "mesh-host: supervisor: app: exited",
      full: "mesh-host: supervisor: app",
    },
    { children: ["watches"], line: "lost", said: "watches: lost", full: "watches" },
  ];
  for (const row of rows) {
    const lines: string[] = [];
    let log = createLogger({
      ...(row.name === undefined ? {} : { name: row.name }),
      write: (l) => lines.push(l),
    });
    for (const child of row.children) log = log.child(child);
    log(row.line);
    assert.deepEqual(lines, [row.said]);
    assert.equal(log.scope, row.full);
  }
});

test("loggerFrom takes a plain log function as it is, and a logger unchanged", () => {
  const lines: string[] = [];
  const plain = (l: string): void => void lines.push(l);
  const logger = loggerFrom(plain);
  logger.child("part")("said");
  assert.equal(loggerFrom(logger), logger);
  assert.deepEqual(lines, ["part: said"]);
});

import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { test } from "node:test";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { createLogger } from "./logger.js";
import { aborted } from "./lifecycle.js";
import { ExitCode, runProcess } from "./process-shell.js";

/** The shell's options with a stand-in process: signals emitted by the test, lines kept. */
function shell() {
  const source = new EventEmitter();
  const lines: string[] = [];
  const exits: number[] = [];
  return {
    source,
    lines,
    exits,
    options: {
      name: "mesh-test",
      source,
      exit: (code: number) => void exits.push(code),
      log: createLogger({ name: "mesh-test", write: (l) => lines.push(l) }),
    },
  };
}

test("the process shell: table of how main ends and the exit code", async (t) => {
  const rows: {
    name: string;
    main: (signal: AbortSignal, stop: () => void) => Promise<number | void>;
    code: number;
    said: string[];
  }[] = [
    { name: "returns nothing", main: () => Promise.resolve(), code: ExitCode.done, said: [] },
    { name: "returns a code", main: () => Promise.resolve(3), code: 3, said: [] },
    {
      name: "a MeshError is said with its code",
      main: () => Promise.reject(new MeshError(ErrorCode.NOT_FOUND, "no such node n9")),
      code: ExitCode.failed,
      said: ["mesh-test: failed: no such node n9 [NOT_FOUND]"],
    },
    {
      name: "a USAGE error exits 2",
      main: () => Promise.reject(new MeshError(ErrorCode.USAGE, "--node is required")),
      code: ExitCode.usage,
      said: ["mesh-test: failed: --node is required [USAGE]"],
    },
    {
      name: "an error after the stop began is the stop",
      main: async (signal, stop) => {
        stop();
        await aborted(signal);
        throw new Error("closed under it");
      },
      code: ExitCode.done,
      said: ["mesh-test: SIGTERM: stopping"],
    },
  ];
  for (const row of rows) {
    await t.test(row.name, async () => {
      const s = shell();
      const code = await runProcess(s.options, ({ signal }) =>
        row.main(signal, () => void s.source.emit("SIGTERM", "SIGTERM")),
      );
      assert.equal(code, row.code);
      assert.deepEqual(s.lines, row.said);
      assert.equal(s.source.listenerCount("SIGTERM"), 0, "the signals are let go");
    });
  }
});

test("the process shell hands main its logger, whose children say their part", async () => {
  const s = shell();
  await runProcess(s.options, ({ log }) => {
    log.child("watches")("ready");
    return Promise.resolve();
  });
  assert.deepEqual(s.lines, ["mesh-test: watches: ready"]);
});

test("an error that is not a MeshError is said as INTERNAL with its stack", async () => {
  const s = shell();
  const code = await runProcess(s.options, () => Promise.reject(new TypeError("x is undefined")));
  assert.equal(code, ExitCode.failed);
  assert.match(
    s.lines[0] ?? "",
    /^mesh-test: failed: TypeError: x is undefined\n[\s\S]*\[INTERNAL\]$/,
  );
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { ErrorCode } from "@mesh/protocol";
import { waitsForBus, type Waiting } from "./apply.js";

const fix = "nothing to do";
const waits = (...list: Waiting[]) => new Map(list.map((w, i) => [`m${i}`, w]));

// Issue 27: the host decided whether to apply again soon by `what.startsWith("waiting for the
// bus")`, so rewording the message would have stopped it retrying. It decides on the code.
test("a module waiting for the bus is told by its code, not its words", () => {
  assert.equal(
    waitsForBus(waits({ code: ErrorCode.BUS_UNAVAILABLE, what: "the object store is away", fix })),
    true,
  );
  assert.equal(
    waitsForBus(waits({ code: ErrorCode.NOT_FOUND, what: "waiting for the bus credential", fix })),
    false,
  );
  assert.equal(
    waitsForBus(
      waits(
        { code: ErrorCode.NOT_FOUND, what: "waiting for secret `token` of app", fix },
        { code: ErrorCode.BUS_UNAVAILABLE, what: "fetching app's bundle", fix },
      ),
    ),
    true,
  );
  assert.equal(waitsForBus(new Map()), false);
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseJoinToken, pinJoinToken, unpinJoinToken } from "./layout.js";

const token = "0123456789ab.abcdefghijklmnopqrstuvwxyz_-AB";
const fingerprint = Array.from({ length: 32 }, (_, i) =>
  (i * 7 + 10).toString(16).toUpperCase().padStart(2, "0"),
).join(":");

describe("pinned join tokens", () => {
  it("carry the certificate's fingerprint and give back the token and the pin", () => {
    const pinned = pinJoinToken(token, fingerprint);
    assert.equal(parseJoinToken(pinned), undefined, "the pinned form is not presented as it is");
    assert.deepEqual(unpinJoinToken(pinned), { token, fingerprint });
  });

  it("leave a token without a pin as it is", () => {
    assert.deepEqual(unpinJoinToken(token), { token });
    assert.deepEqual(unpinJoinToken("not-a-token"), { token: "not-a-token" });
  });
});

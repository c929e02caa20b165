import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { buildProgram } from "../../program.js";
import { completionScript, verbsOf } from "./completion.js";

describe("mesh completion", () => {
  const verbs = verbsOf(buildProgram());

  test("the verbs and their options come from the program itself", () => {
    const mcp = verbs.find((v) => v.name === "mcp");
    assert.ok(mcp);
    assert.ok(mcp.options.includes("--allow") && mcp.options.includes("--http"));
    assert.equal(verbs.find((v) => v.name === "assign")?.moduleArgument, true);
    const module = verbs.find((v) => v.name === "module")?.subcommands ?? [];
    for (const sub of ["add", "list", "show"]) assert.ok(module.includes(sub), sub);
    assert.equal(
      verbs.find((v) => v.name === "completion")?.options.includes("--names"),
      false,
      "the scripts' own helper option is not offered",
    );
  });

  test("the bash and zsh scripts are valid shell, and fish names every verb", () => {
    for (const shell of ["bash", "zsh"] as const) {
      const checked = spawnSync("bash", ["-n"], { input: completionScript(shell, verbs) });
      assert.equal(checked.status, 0, `${shell}: ${checked.stderr.toString()}`);
    }
    const fish = completionScript("fish", verbs);
    for (const verb of verbs) assert.match(fish, new RegExp(`\\b${verb.name}\\b`));
    assert.match(fish, /-l module -r -a "\(mesh completion --names modules/);
  });
});

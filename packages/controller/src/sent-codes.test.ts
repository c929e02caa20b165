/**
 * Every code the controller or host sends over the bus is one of a closed table: the protocol's
 * `ErrorCode` (a coded reply, a have's `lastErrorCode`, a wait's `code`) or the table of reasons a
 * node is not composed (core's `CompositionRule` and the controller's `NodeInputRule`). Issue 27:
 * the controller once said a refusal with the code "internal", which no table holds, and readers
 * could only match its words. The types close most of it; this test reads the sources for a code
 * written as a bare string, which a widened type would let through.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { CompositionRule } from "@mesh/core";
import { ErrorCode } from "@mesh/protocol";
import { NodeInputRule } from "./node-plan.js";

const PACKAGES = fileURLToPath(new URL("../../", import.meta.url));
const SENDERS = ["controller", "host"];
const TABLE = new Set<string>([
  ...Object.values(ErrorCode),
  ...Object.keys(CompositionRule),
  ...Object.keys(NodeInputRule),
]);

/** Every `code: "<literal>"` and `new MeshError("<literal>", …)` in a file, with its line. */
function literalCodes(file: string, text: string): { code: string; line: number }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { code: string; line: number }[] = [];
  const add = (written: ts.Node) => {
    // `"x" as Code`, `("x")`, `"x" satisfies Code` say the same literal.
    let node = written;
    while (
      ts.isAsExpression(node) ||
      ts.isParenthesizedExpression(node) ||
      ts.isSatisfiesExpression(node)
    )
      node = node.expression;
    if (ts.isStringLiteralLike(node))
      found.push({
        code: node.text,
        line: source.getLineAndCharacterOfPosition(node.pos).line + 1,
      });
  };
  const visit = (node: ts.Node): void => {
    // A schema's issue (`ctx.addIssue({ code: "custom" })`) is zod's, never sent on the bus.
    if (ts.isCallExpression(node) && /\.addIssue$/.test(node.expression.getText(source))) return;
    if (ts.isPropertyAssignment(node) && node.name.getText(source) === "code")
      add(node.initializer);
    if (ts.isNewExpression(node) && node.expression.getText(source) === "MeshError") {
      const first = node.arguments?.[0];
      if (first !== undefined) add(first);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

async function sourcesOf(pkg: string): Promise<string[]> {
  const dir = join(PACKAGES, pkg, "src");
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !/\.test\.ts$|test-support/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

test("every code the controller or host sends is in a closed table (none invented, as 'internal' was)", async () => {
  const outside: string[] = [];
  let seen = 0;
  for (const pkg of SENDERS)
    for (const file of await sourcesOf(pkg)) {
      for (const { code, line } of literalCodes(file, await readFile(file, "utf8"))) {
        seen++;
        if (!TABLE.has(code)) outside.push(`${file.slice(PACKAGES.length)}:${line} ${code}`);
      }
    }
  assert.ok(seen > 0, "the controller's refusals say codes as literals: none were found");
  assert.deepEqual(outside, [], "codes in no table");
});

/**
 * docs/errors.md and the code must list the same codes: every ErrorCode and every ReplyCode has
 * a row with a meaning and a fix, and the doc lists no code the code does not have.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { ErrorCode, ReplyCode } from "./errors.js";

/** This file runs from packages/protocol/dist/; the repository root is three folders up. */
const DOC = fileURLToPath(new URL("../../../docs/errors.md", import.meta.url));

const SECTIONS = { errors: "Error codes", replies: "Reply codes" } as const;
const HEADER = ["code", "meaning", "what to do"];

interface Row {
  readonly code: string;
  readonly meaning: string;
  readonly fix: string;
  readonly line: number;
}

/** The cells of a table line; `\|` inside a cell is a literal pipe. */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, "")
    .replace(/(?<!\\)\|$/, "")
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replaceAll("\\|", "|"));
}

/**
 * The rows of the first table under the `## <heading>` section, or the problems that make it
 * unreadable (no such section, no table, a header other than `| code | meaning | what to do |`).
 */
function table(doc: string, heading: string): { rows: Row[]; problems: string[] } {
  const lines = doc.split(/\r?\n/);
  const start = lines.findIndex((l) => l.trim() === `## ${heading}`);
  if (start < 0) return { rows: [], problems: [`no section "## ${heading}"`] };
  const rows: Row[] = [];
  const problems: string[] = [];
  let header: string[] | undefined;
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (line.startsWith("## ")) break;
    if (!line.trim().startsWith("|")) {
      if (header !== undefined && line.trim() !== "") break; // the table ended
      continue;
    }
    const row = cells(line);
    if (header === undefined) {
      header = row.map((cell) => cell.toLowerCase());
      if (header.join("|") !== HEADER.join("|")) {
        problems.push(
          `"## ${heading}": the table's header is | ${row.join(" | ")} |, not | ${HEADER.join(" | ")} |`,
        );
      }
      continue;
    }
    if (row.every((cell) => /^:?-+:?$/.test(cell))) continue; // the separator line
    if (row.length !== HEADER.length) {
      problems.push(`"## ${heading}" line ${i + 1}: ${row.length} cells, not ${HEADER.length}`);
    }
    const [code = "", meaning = "", fix = ""] = row;
    rows.push({ code: code.replace(/^`(.*)`$/, "$1"), meaning, fix, line: i + 1 });
  }
  if (header === undefined) problems.push(`"## ${heading}" holds no table`);
  return { rows, problems };
}

/** Every way `doc`'s table under `heading` and `codes` differ, each naming the code. */
function drift(doc: string, heading: string, codes: readonly string[]): string[] {
  const { rows, problems } = table(doc, heading);
  const documented = new Map<string, Row>();
  for (const row of rows) {
    if (documented.has(row.code)) problems.push(`${row.code}: listed twice under "## ${heading}"`);
    documented.set(row.code, row);
    if (!codes.includes(row.code)) {
      problems.push(
        `${row.code}: in docs/errors.md "## ${heading}" (line ${row.line}) but not in the code`,
      );
    }
    if (row.meaning === "") problems.push(`${row.code}: no meaning under "## ${heading}"`);
    if (row.fix === "") problems.push(`${row.code}: no "what to do" under "## ${heading}"`);
  }
  for (const code of codes) {
    if (!documented.has(code))
      problems.push(`${code}: in the code but not in docs/errors.md "## ${heading}"`);
  }
  return problems;
}

describe("docs/errors.md matches the code", () => {
  const doc = readFileSync(DOC, "utf8");

  test("every ErrorCode, and nothing else, has a row with a meaning and a fix", () => {
    const problems = drift(doc, SECTIONS.errors, Object.values(ErrorCode));
    assert.deepEqual(problems, [], problems.join("\n"));
  });

  test("every ReplyCode, and nothing else, has a row with a meaning and a fix", () => {
    const problems = drift(doc, SECTIONS.replies, Object.values(ReplyCode));
    assert.deepEqual(problems, [], problems.join("\n"));
  });
});

describe("the drift check itself", () => {
  const doc = (rows: string): string =>
    `# Errors\n\n## Error codes\n\n| code | meaning | what to do |\n|---|---|---|\n${rows}\n## Other\n\n| code | meaning | what to do |\n|---|---|---|\n| \`ELSEWHERE\` | m | f |\n`;

  test("passes when the table and the codes agree, backticks or not", () => {
    assert.deepEqual(
      drift(doc("| `A` | m | f |\n| B | m \\| n | f |\n"), "Error codes", ["A", "B"]),
      [],
    );
  });

  test("names a code that is in the code but not in the doc", () => {
    assert.deepEqual(drift(doc("| `A` | m | f |\n"), "Error codes", ["A", "B"]), [
      'B: in the code but not in docs/errors.md "## Error codes"',
    ]);
  });

  test("names a code that is in the doc but not in the code", () => {
    const problems = drift(doc("| `A` | m | f |\n| `GONE` | m | f |\n"), "Error codes", ["A"]);
    assert.equal(problems.length, 1);
    assert.ok(problems[0]?.startsWith("GONE: in docs/errors.md"), problems[0]);
  });

  test("names a code whose meaning or fix is empty", () => {
    assert.deepEqual(drift(doc("| `A` |  | f |\n| `B` | m |  |\n"), "Error codes", ["A", "B"]), [
      'A: no meaning under "## Error codes"',
      'B: no "what to do" under "## Error codes"',
    ]);
  });

  test("names a code listed twice", () => {
    assert.deepEqual(drift(doc("| `A` | m | f |\n| `A` | m | f |\n"), "Error codes", ["A"]), [
      'A: listed twice under "## Error codes"',
    ]);
  });

  test("reads only its own section", () => {
    assert.ok(
      !drift(doc("| `A` | m | f |\n"), "Error codes", ["A"]).some((p) => p.includes("ELSEWHERE")),
    );
  });

  test("fails when the section, the table or its header is missing", () => {
    assert.deepEqual(drift("# Errors\n", "Error codes", []), ['no section "## Error codes"']);
    assert.deepEqual(drift("## Error codes\n\nnone yet\n", "Error codes", []), [
      '"## Error codes" holds no table',
    ]);
    const wrongHeader = "## Error codes\n\n| code | meaning |\n|---|---|\n";
    assert.equal(drift(wrongHeader, "Error codes", []).length, 1);
  });
});

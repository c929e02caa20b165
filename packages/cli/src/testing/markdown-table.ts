/** A Markdown table as docs/*.md show measured results: a header, its rule, a row per result. */
export function markdownTable(
  headers: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;
  return [line(headers), `|${headers.map(() => "---|").join("")}`, ...rows.map(line)].join("\n");
}

/**
 * A Markdown table as docs/*.md show measured results: a row per item, a column per entry of
 * `columns` in their order, headed by the entry's name, its cell what its function makes of the item.
 */
export function markdownTable<T>(
  items: readonly T[],
  columns: Readonly<Record<string, (item: T) => string>>,
): string {
  const headers = Object.keys(columns);
  const cellsOf = (item: T): string[] => Object.values(columns).map((cell) => cell(item));
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;
  return [
    line(headers),
    `|${headers.map(() => "---|").join("")}`,
    ...items.map((item) => line(cellsOf(item))),
  ].join("\n");
}

/**
 * The view's first paint: from `mesh view` starting to its page's state and first grid page
 * answered (what a page fetches before it can draw), and how many bytes they are.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../packages/cli/dist/main.js", import.meta.url));

/** One first paint of `mesh view --json <args>` (`--root DIR` or `--credential FILE`). */
export async function viewFirstPaint(
  args: readonly string[],
): Promise<{ ms: number; bytes: number }> {
  const start = performance.now();
  const child = spawn(process.execPath, [CLI, "view", "--json", ...args], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        out += chunk;
        const m = /"url":\s*"([^"]+)"/.exec(out);
        if (m?.[1] !== undefined) resolve(m[1]);
      });
      child.once("exit", (code) => reject(new Error(`mesh view exited ${String(code)}`)));
    });
    const get = (path: string, query: Record<string, string> = {}) => {
      const u = new URL(url);
      u.pathname = path;
      for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
      return fetch(u).then((r) => r.text());
    };
    const [state, grid] = await Promise.all([
      get("/api/state"),
      get("/api/grid", { from: "0", count: "50" }),
    ]);
    return { ms: performance.now() - start, bytes: state.length + grid.length };
  } finally {
    child.kill("SIGINT");
    await new Promise((r) => child.once("close", r));
  }
}

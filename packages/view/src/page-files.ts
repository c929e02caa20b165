/**
 * The page's files, read once at start: a fixed set served by exact path, so no request can name
 * a file outside them. `/` is index.html; the rest under `/static/`.
 */
import { readFile, readdir } from "node:fs/promises";
import { extname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCode, MeshError } from "@mesh/protocol";
import type { PageFile } from "./respond.js";

/** Where the page's files are: `static/` beside `dist/`, and the compiled `dist/browser/`. */
const STATIC_DIR = fileURLToPath(new URL("../static/", import.meta.url));
const BROWSER_DIR = fileURLToPath(new URL("./browser/", import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** The page's files by the path they are served at. */
export async function pageFiles(): Promise<Map<string, PageFile>> {
  const out = new Map<string, PageFile>();
  const add = async (dir: string, name: string, path: string): Promise<void> => {
    const type = CONTENT_TYPES[extname(name)];
    if (type === undefined) return;
    out.set(path, { body: await readFile(join(dir, name)), type });
  };
  for (const name of await readdir(STATIC_DIR))
    await add(STATIC_DIR, name, name === "index.html" ? "/index.html" : `/static/${name}`);
  // The page's scripts, sections/ included.
  for (const name of await readdir(BROWSER_DIR, { recursive: true }))
    await add(BROWSER_DIR, name, `/static/browser/${name.split(sep).join("/")}`);
  if (!out.has("/index.html") || !out.has("/static/browser/main.js")) {
    throw new MeshError(
      ErrorCode.INTERNAL,
      `the view's page is not built (${STATIC_DIR}index.html, ${BROWSER_DIR}main.js); run \`npm run build\``,
    );
  }
  return out;
}

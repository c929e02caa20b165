/**
 * What the view's browser tests share: Chromium launched headless (failing, never skipping,
 * without it), steps that save the page when they fail, and the screenshots of each view kept
 * under `test-results/view/` (gitignored) by every run.
 */
import assert from "node:assert/strict";
import { access, mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import type { View } from "./start-view.js";
import type { TestMesh } from "./test-support.js";

const CHROMIUM = process.env["MESH_CHROMIUM"] ?? "/usr/bin/chromium";

/** The repository's `test-results/view/` (from `packages/view/dist/`). */
export const SCREENSHOTS = fileURLToPath(new URL("../../../test-results/view/", import.meta.url));

export async function launch(): Promise<Browser> {
  try {
    await access(CHROMIUM);
  } catch {
    assert.fail(
      `Chromium is missing at ${CHROMIUM}, so the view cannot be tested in a browser. ` +
        `Install it (as root: apt-get install -y chromium, which scripts/setup.sh does), or set MESH_CHROMIUM to its path.`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}

/** A step of a browser test: its name (said, and its screenshot named, when it fails) and its work. */
export type Step<T> = readonly [name: string, run: (t: T) => Promise<void>];

/**
 * One browser test's Chromium: launched by the first page asked of it (call that in the test, not
 * in before(): a machine without Chromium then fails the test, by name), the errors of all its
 * pages collected, and steps that save the page last opened when they fail. Closed by the suite's
 * after hook, which it registers first of the suite's: make it before the suite's own after().
 */
export class TestChromium {
  /** What the pages threw; a test ends by asserting it is empty. */
  readonly pageErrors: string[] = [];
  readonly #waitMs: number;
  #browser: Browser | undefined;
  #page: Page | undefined;

  /** Each page waits at most `waitMs` for anything; `after` is the suite's (`node:test`'s). */
  constructor(waitMs: number, hooks: { readonly after: (fn: () => Promise<void>) => void }) {
    this.#waitMs = waitMs;
    hooks.after(async () => {
      await this.#browser?.close();
    });
  }

  /** A page in a context of its own (another operator); failing steps save it from now on. */
  async newPage(): Promise<Page> {
    this.#browser ??= await launch();
    this.#page = await pageOf(this.#browser, this.pageErrors, this.#waitMs);
    return this.#page;
  }

  /** Runs a step; when it fails, saves what the last page looked like and says where. */
  readonly step = (name: string, run: () => Promise<void>): Promise<void> =>
    stepper(() => this.#page, this.pageErrors)(name, run);

  /** Runs `steps` in order, each handed `t`, as steps; then checks that no page threw. */
  async steps<T>(t: T, steps: ReadonlyArray<Step<T>>): Promise<void> {
    for (const [name, run] of steps) await this.step(name, () => run(t));
    assert.deepEqual(this.pageErrors, []);
  }
}

/**
 * A page in a context of its own (its own cookies: another operator), accepting the view's
 * self-signed certificate.
 */
export async function pageOf(
  browser: Browser,
  pageErrors: string[],
  waitMs: number,
): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    ignoreHTTPSErrors: true,
  });
  const page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.setDefaultTimeout(waitMs);
  return page;
}

/** Opens the view at `url` (its page, or a login link to it) and waits until it shows the mesh. */
export async function openView(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector("body[data-ready]");
}

/** What a step of a browser test of the view works with: the page, the mesh and the view on it. */
export interface OnTheView<Mesh = TestMesh> {
  readonly page: Page;
  readonly mesh: Mesh;
  readonly view: View;
}

/**
 * Runs `steps` on a new page that first opens the view (the step "open"), each handed the page,
 * the mesh and the view; then checks that no page threw. Call it in the test, not in before(): a
 * machine without Chromium then fails the test, by name.
 */
export async function stepsOnTheView<Mesh>(
  chromium: TestChromium,
  on: { readonly mesh: Mesh; readonly view: View },
  steps: ReadonlyArray<Step<OnTheView<Mesh>>>,
): Promise<void> {
  const page = await chromium.newPage();
  const { mesh, view } = on;
  await chromium.steps<OnTheView<Mesh>>({ page, mesh, view }, [
    ["open", () => openView(page, view.url)],
    ...steps,
  ]);
}

/** Saves the page as `test-results/view/<name>.png`. */
export async function keepScreenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Runs steps; when one fails, saves what the page looked like and says where. */
function stepper(
  page: () => Page | undefined,
  pageErrors: readonly string[],
): (name: string, run: () => Promise<void>) => Promise<void> {
  return async (name, run) => {
    try {
      await run();
    } catch (error) {
      const dir = await mkdtemp(join(tmpdir(), "mesh-view-failure-"));
      const path = join(dir, `${name.replace(/[^a-z0-9]+/gi, "-")}.png`);
      await page()
        ?.screenshot({ path, fullPage: true })
        .catch(() => undefined);
      process.stderr.write(`the view test failed at "${name}"; the page is saved at ${path}\n`);
      if (pageErrors.length > 0)
        process.stderr.write(`errors on the page:\n${pageErrors.join("\n")}\n`);
      throw error;
    }
  };
}

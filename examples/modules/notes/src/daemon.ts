// notes' daemon: it needs its secret `token`. The host does not start it before the secret is
// set (the module waits, and says so in `mesh status`), so here the file is always there.
import { readFile } from "node:fs/promises";
import { secretPath } from "@mesh/sdk/process";

const token = (await readFile(secretPath("token"), "utf8")).trim();
process.stdout.write(`notes: holding a token of ${token.length} characters\n`);
const alive = setInterval(() => undefined, 60_000);
process.once("SIGTERM", () => {
  clearInterval(alive);
  process.exit(0);
});

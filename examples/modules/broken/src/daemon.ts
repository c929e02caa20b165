// broken's daemon: steady in its first build. Change src/mode.json to {"mode": "crash"} and the
// indexer sees a new revision, the builder builds it, the host runs it, it exits at once, the host
// reports it failing, and the assigner sets the node back to the last build that ran healthy,
// with a condition saying so.
import mode from "./mode.json" with { type: "json" };

if (mode.mode === "crash") {
  process.stderr.write("broken: this build crashes on purpose (src/mode.json says so)\n");
  process.exit(1);
}
process.stdout.write("broken: steady\n");
const alive = setInterval(() => undefined, 60_000);
process.once("SIGTERM", () => {
  clearInterval(alive);
  process.exit(0);
});

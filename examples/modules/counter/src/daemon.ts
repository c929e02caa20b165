// counter's daemon: a process the host runs with counter's own bus credential. It keeps the
// state `counts` (readable by others: board reads it) and adds one to `total` every second.
import { connectProcess } from "@mesh/sdk/process";

const mesh = await connectProcess();
mesh.keeps([{ name: "counts", readable: true }]);
const counts = mesh.state("counts");
let total = Number((await counts.get("total")) ?? 0);
await mesh.condition("counting", "info", `counting from ${total} on ${mesh.node}`);

const tick = setInterval(() => {
  total += 1;
  counts.put("total", total).catch((error: unknown) => {
    process.stderr.write(`counter: could not write the total: ${(error as Error).message}\n`);
  });
}, 1000);

const stop = () => {
  clearInterval(tick);
  void mesh.close().finally(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);

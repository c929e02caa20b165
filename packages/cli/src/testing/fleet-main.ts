/**
 * `npm run fleet -- --nodes N [--servers 3] [--delay-ms 200 --loss 5]`: a fleet on this machine
 * (fleet.ts), each bus server and each node on a network stack of its own, until Ctrl-C; then
 * everything it made is removed (also when it is killed: the reaper stops its link wires and
 * deletes its namespaces). `--delay-ms` adds that round trip to every node's link and `--loss`
 * drops that share of packets each way (decision 0213). Needs root (network namespaces).
 */
import { parseArgs } from "node:util";
import { Fleet } from "./fleet.js";
import { MESH_MAIN } from "./run-mesh.js";

const { values } = parseArgs({
  options: {
    nodes: { type: "string" },
    servers: { type: "string" },
    "delay-ms": { type: "string" },
    loss: { type: "string" },
  },
});
const slow = values["delay-ms"] !== undefined || values.loss !== undefined;
const say = (line: string) => process.stdout.write(`fleet: ${line}\n`);
const fleet = await Fleet.start({
  nodes: Number(values.nodes ?? 3),
  servers: Number(values.servers ?? 3),
  ...(slow
    ? {
        link: {
          delayMs: Number(values["delay-ms"] ?? 0),
          lossPercent: Number(values.loss ?? 0),
        },
      }
    : {}),
  say,
}).catch((error: unknown) => {
  process.stderr.write(`fleet: ${(error as Error).message}\n`);
  process.exit(1);
});
const c = fleet.net.member("c");
process.stdout.write(
  [
    "",
    `The fleet is up: ${fleet.nodes.length} nodes, ${fleet.servers.length} bus servers; the demo ran healthy on every node ${(fleet.convergedMs / 1000).toFixed(1)} s after the first join.`,
    ...fleet.servers.map((s) => `  ${s.name.padEnd(5)} ${s.address.padEnd(14)} ns ${s.netns}`),
    `  c     ${c.address.padEnd(14)} ns ${c.netns}  (mesh up: controller, view, its own node)`,
    ...fleet.nodes.map(
      (n) =>
        `  ${n.name.padEnd(5)} ${n.member.address.padEnd(14)} ns ${n.member.netns}  root ${n.root}`,
    ),
    "",
    "Try:",
    `  node ${MESH_MAIN} status --root ${fleet.control.root}`,
    `  node ${MESH_MAIN} call hello/greet '{"name":"Ada"}' --node ${fleet.nodes[0]?.name ?? "n1"} --root ${fleet.control.root}`,
    `  ip -n ${fleet.net.hub} link set ${fleet.nodes[0]?.name ?? "n1"} down   # a partition; up heals it`,
    "Press Ctrl-C to stop and remove everything.",
    "",
  ].join("\n"),
);
await new Promise<void>((resolve) => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
});
say("stopping");
await fleet.stop();
say("removed every namespace, link and process it made");
process.exit(0);

/**
 * The assigner's put tools served for tests that run a bus without a host (decision 0190): the
 * bundle `mesh-assigner` ships, loaded by a real runtime in this process and served on the bus as
 * `mesh-assigner/put` and `/unput` on `node`, as the delivery node's runtime serves them. The host
 * that would answer the runtime's provision asks is stood in for by a service answering exactly the
 * bound values the controller composes for the part (core's `boundValues` of its shipped manifest).
 * A real mesh (`mesh up`) serves the same bundle: e2e/self-hosting.e2e.test.ts.
 */
import { once } from "@mesh/kit";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MeshBus, serve, type Served } from "@mesh/bus";
import { deadline } from "@mesh/bus/testing";
import { boundValues } from "@mesh/core";
import { readShippedParts, unpackArchive } from "@mesh/delivery";
import {
  ErrorCode,
  MeshError,
  MeshPart,
  ProvisionAsk,
  RUNTIME_MODULE,
  provisionSubject,
  type Credential,
} from "@mesh/protocol";
import { Runtime, type RuntimeStatus } from "@mesh/runtime";
import { SHIPPED_PARTS } from "../shipped.js";

export interface AssignerTools extends AsyncDisposable {
  stop(): Promise<void>;
}

/**
 * Serves the shipped assigner tools on `node`, connected with `credential` (its node and module
 * are taken as the runtime's: `node-tools` of `node`); `admin` answers the provision asks.
 */
export async function serveAssignerTools(input: {
  readonly admin: MeshBus;
  readonly credential: Credential;
  readonly node: string;
}): Promise<AssignerTools> {
  const index = await readShippedParts(SHIPPED_PARTS);
  const part = index.parts.find((p) => p.module === MeshPart.assigner);
  const tools = part?.bundles.find((b) => b.name === "tools");
  if (part === undefined || tools === undefined) {
    throw new Error(`${SHIPPED_PARTS} ships no ${MeshPart.assigner} tools: run npm run build`);
  }
  const dir = await mkdtemp(join(tmpdir(), "mesh-assigner-tools-"));
  await unpackArchive(await readFile(join(SHIPPED_PARTS, tools.file)), dir);
  const bound = boundValues(input.node, part.manifest, input.credential.servers);
  const provision: Served = await serve(input.admin, {
    name: "mesh-provision-stand-in",
    version: "0.0.0",
    endpoints: [
      {
        name: "provision",
        subject: provisionSubject(input.node),
        handler: (request) => {
          const ask = ProvisionAsk.parse(request.json());
          const value =
            ask.module === part.module && ask.kind === "bound" ? bound[ask.key] : undefined;
          if (value === undefined) {
            return Promise.reject(
              new MeshError(ErrorCode.NOT_FOUND, `${ask.module} has no ${ask.kind} ${ask.key}`),
            );
          }
          return Promise.resolve({ value });
        },
      },
    ],
  });
  const bus = await MeshBus.connect({
    ...input.credential,
    node: input.node,
    module: RUNTIME_MODULE,
  });
  let ready!: (s: RuntimeStatus) => void;
  const serving = new Promise<RuntimeStatus>((resolve) => (ready = resolve));
  const runtime = Runtime.create({
    bus,
    node: input.node,
    modules: new Map([[part.module, [join(dir, "src", "tools.js")]]]),
    log: () => undefined,
    onStatus: (s) => {
      if (s.modules[part.module]?.state === "serving") ready(s);
    },
  });
  const stop = once(async () => {
    await runtime.stop();
    await bus.close();
    await provision.stop();
    await rm(dir, { recursive: true, force: true });
  });
  try {
    await deadline(serving, 60_000, "the assigner's tools to be served");
  } catch (error) {
    await stop();
    throw error;
  }
  return { stop, [Symbol.asyncDispose]: stop };
}

/** Runs one delivery daemon from a command line: `<indexer|builder|assigner> --credential FILE [--puts-reopen-ms N]`. */
import { Env } from "@mesh/protocol";
import { Assigner } from "./assigner/assigner.js";
import { Builder } from "./builder.js";
import { Indexer } from "./indexer.js";
import { runDaemonProcess } from "./daemon.js";
import { BuildModule } from "./build-modules/build-module.js";
import { SHIPPED_LANGUAGES, shippedBuilder } from "./build-modules/builders.js";

export const DELIVERY_DAEMONS = ["indexer", "builder", "assigner"] as const;
export type DeliveryDaemon = (typeof DELIVERY_DAEMONS)[number];

export interface DeliveryProcessOptions {
  readonly credential: string;
  /** The assigner's puts reopen interval. */
  readonly putsReopenMs?: number;
}

/** Runs the named daemon in this process until SIGTERM; returns the exit code. */
export function runDeliveryDaemon(
  which: DeliveryDaemon,
  options: DeliveryProcessOptions,
): Promise<number> {
  return runDaemonProcess(which, { credential: options.credential }, async (bus, log) => {
    switch (which) {
      case "assigner":
        return Assigner.create({
          bus,
          log,
          ...(options.putsReopenMs === undefined
            ? {}
            : { putsReopenIntervalMs: options.putsReopenMs }),
        });
      case "builder":
        return Builder.create({ bus, log });
      case "indexer":
        return Indexer.create({ bus, log });
    }
  });
}

export async function runDelivery(argv: readonly string[]): Promise<number> {
  const [which, ...rest] = argv;
  let credential = process.env[Env.brokerFile] ?? process.env[Env.credential];
  let putsReopenMs: number | undefined;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "--credential") credential = rest[++i];
    else if (rest[i] === "--puts-reopen-ms") putsReopenMs = Number(rest[++i]);
  }
  if (!DELIVERY_DAEMONS.includes(which as DeliveryDaemon) || credential === undefined) {
    process.stderr.write(
      `usage: mesh-delivery <${DELIVERY_DAEMONS.join("|")}> --credential FILE (or ${Env.brokerFile}) [--puts-reopen-ms N]\n`,
    );
    return 2;
  }
  return runDeliveryDaemon(which as DeliveryDaemon, {
    credential,
    ...(putsReopenMs === undefined ? {} : { putsReopenMs }),
  });
}

/** Runs the build module of `language` in this process until SIGTERM; returns the exit code. */
export function runBuildModule(
  language: string,
  options: { readonly credential: string },
): Promise<number> {
  const builder = shippedBuilder(language);
  if (builder === undefined) {
    process.stderr.write(
      `mesh ships build modules for ${SHIPPED_LANGUAGES.join(", ")}, not for ${JSON.stringify(language)}\n`,
    );
    return Promise.resolve(2);
  }
  return runDaemonProcess(`build-${language}`, { credential: options.credential }, (bus, log) =>
    BuildModule.create({ bus, builder, log }),
  );
}

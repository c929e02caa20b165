/**
 * `@mesh/delivery`: registering module sources and the three delivery daemons (indexer,
 * builder, assigner) that turn them into builds and assignments.
 */
export { checkArchiveBytes } from "./archive-check.js";
export { directoryDigest, readRegularFile, unpackArchive } from "./source.js";
export { buildSource, type BuiltArchive, type SourceBuild } from "./build-source.js";
export { Assigner, type AssignerOptions } from "./assigner/assigner.js";
export { Builder, type BuilderOptions } from "./builder.js";
export { Indexer, type IndexerOptions } from "./indexer.js";
export { BuildModule, type BuildModuleOptions } from "./build-modules/build-module.js";
export { SHIPPED_LANGUAGES } from "./build-modules/builders.js";
export {
  DELIVERY_DAEMONS,
  runBuildModule,
  runDelivery,
  runDeliveryDaemon,
  type DeliveryDaemon,
  type DeliveryProcessOptions,
} from "./run.js";
export { parseSourceArgument, readSourceManifest, registerModule } from "./register.js";
export { PARTS_DIR, PRINCIPAL_PARTS, partsPrincipalGrant, readPartManifest } from "./parts.js";
export { prebuiltManifest, readShippedParts, shipParts } from "./shipped-parts.js";
export { registerShippedPart, type ShippedRegistration } from "./shipped-register.js";
export { packArchive, type ArchiveFile } from "./pack.js";
/** For tests (here and in the CLI): hand-made hostile archives. */

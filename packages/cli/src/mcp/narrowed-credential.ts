/**
 * The credential of `mesh mcp --allow hello,notes`: not the mesh-wide `mcp` one, filtered, but a
 * bus user the controller's broker issues with `mcpGrant({ modules })`, so the server holds it to
 * those modules' tools whatever the MCP server in front of it offers (docs/security.md). The
 * operator's credential asks for it once at start (after checking every module is registered) and
 * is closed; `mesh mcp` then speaks only as the narrowed principal. It is kept at
 * `<root>/credentials/mcp-<digest>.json` (0600), for `mesh mcp --credential` elsewhere.
 */
import { generateNodeKeys, unseal, writeCredential } from "@mesh/bus";
import { askMcpCredential } from "@mesh/controller";
import { Credential, ErrorCode, MeshError, isMeshError, mcpSealContext } from "@mesh/protocol";
import { allowedModules } from "@mesh/core";
import { connectToMesh } from "../find-mesh.js";
import { registeredModules, unknownName } from "../known.js";
import { credentialPath, rootPaths } from "../mesh-root.js";

/** How long the controller has to issue it (a users-list bus reloads first). */
const ISSUE_TIMEOUT_MS = 30_000;

/** Asks the broker for the credential of `modules` and writes it; returns its file. */
export async function narrowedMcpCredential(options: {
  readonly root: string;
  readonly modules: readonly string[];
  readonly signal?: AbortSignal;
}): Promise<string> {
  const modules = allowedModules(options.modules);
  await using operator = await connectToMesh({
    root: options.root,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const known = await registeredModules(operator);
  for (const module of modules) {
    if (known.includes(module)) continue;
    throw unknownName({
      what: "module",
      name: module,
      known,
      knownAs: "registered",
      fix: "--allow names registered modules only (`mesh module list`); register it first (`mesh module add <folder>`) or leave it out",
      module,
    });
  }
  const keys = generateNodeKeys();
  const answer = await askMcpCredential(
    operator,
    { modules, publicKey: keys.publicKey },
    {
      timeoutMs: ISSUE_TIMEOUT_MS,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    },
  ).catch((error: unknown) => {
    if (!isMeshError(error, ErrorCode.TIMEOUT) && !isMeshError(error, ErrorCode.NOT_FOUND))
      throw error;
    throw new MeshError(
      error.code,
      `the controller did not issue the mcp credential for --allow ${modules.join(",")} (${error.message}); mesh mcp --allow needs the mesh running (\`mesh up\`, then \`mesh status\`)`,
      { cause: error },
    );
  });
  const credential = Credential.parse(
    JSON.parse(unseal(keys.privateKey, answer.sealed, mcpSealContext(answer.principal)).toString()),
  );
  const file = credentialPath(rootPaths(options.root), answer.principal);
  await writeCredential(file, credential);
  return file;
}

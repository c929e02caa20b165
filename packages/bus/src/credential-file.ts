/**
 * The credential file: JSON, mode 0600, holding everything a process needs to speak on the bus
 * as itself. A file that others can read is refused: a password anyone on the machine can read
 * is no credential.
 */
import { open, stat } from "node:fs/promises";
import {
  Credential,
  ErrorCode,
  MeshError,
  Principal,
  inboxPrefix,
  issuesText,
} from "@mesh/protocol";
import { writeFileAtomic } from "@mesh/kit";

/** Reads and checks a credential file. */
export async function readCredential(path: string): Promise<Credential> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch (error) {
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `cannot read the credential file ${JSON.stringify(path)} (${(error as NodeJS.ErrnoException).code ?? String(error)}); ` +
        `check the path, or run \`mesh up\` to create the operator's credential`,
      { path, cause: error },
    );
  }
  // 0600, or the stricter 0400; anything else either lets others in or is not a plain secret file.
  const bits = mode & 0o777;
  if (bits !== 0o600 && bits !== 0o400) {
    const exposed = (bits & 0o077) !== 0;
    throw new MeshError(
      ErrorCode.CREDENTIAL_EXPOSED,
      `the credential file ${JSON.stringify(path)} has mode ${bits.toString(8).padStart(4, "0")}, not 0600` +
        (exposed ? ", so others on this machine can read its password" : "") +
        `; run \`chmod 600 ${path}\`` +
        (exposed ? " and, since it may have been read, ask for a new credential" : ""),
      { path },
    );
  }
  // Read through the handle we checked, so the file cannot be swapped between check and read.
  const handle = await open(path, "r");
  let text: string;
  try {
    text = await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `the credential file ${JSON.stringify(path)} is not JSON (${(error as Error).message}); it was damaged — ask for a new credential`,
      { path, cause: error },
    );
  }
  const parsed = Credential.safeParse(json);
  if (!parsed.success) {
    const problems = issuesText(parsed.error);
    throw new MeshError(
      ErrorCode.CREDENTIAL_INVALID,
      `the credential file ${JSON.stringify(path)} is not a mesh credential: ${problems}; ask for a new credential`,
      { path, cause: parsed.error },
    );
  }
  return parsed.data;
}

/**
 * Writes a credential file with mode 0600, atomically: the file is created 0600 under a temporary
 * name and renamed into place, so no reader ever sees it half-written or with a wider mode.
 */
export async function writeCredential(path: string, credential: Credential): Promise<void> {
  const checked = Credential.parse(credential);
  await writeFileAtomic(path, `${JSON.stringify(checked, null, 2)}\n`, { mode: 0o600 });
}

/**
 * The inbox prefix a credential's connections use: `_INBOX.<node>.<module>`; undefined (NATS's
 * default `_INBOX.<nuid>`) for the operator, who speaks like the `nats` CLI so that stock tools
 * work with the operator's context (decision 0070).
 */
export function credentialInbox(credential: Credential): string | undefined {
  if (credential.module === Principal.operator) return undefined;
  return inboxPrefix(credential.node, credential.module);
}

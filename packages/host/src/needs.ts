/**
 * Need files: a module's credential and secrets, sealed to this node's key in the composition,
 * unsealed here and written 0600, owned by the user of the process that reads them. The sealed
 * text is opened with the need's resource id as context, so a value sealed for another need (or
 * node) does not open.
 */
import type { KeyObject } from "node:crypto";
import { lstat, rm } from "node:fs/promises";
import { isAbsolute, normalize } from "node:path";
import { unseal } from "@mesh/bus";
import { writeFileAtomic } from "@mesh/kit";
import { ErrorCode, MeshError, type NeedResource } from "@mesh/protocol";
import { lookupAccount, runningAsRoot } from "./accounts.js";

/**
 * Refuses a path the host must not write: anything but a normal path inside the module's own
 * secrets folder, `<root>/secrets/<module>/`. The composition puts every declared file there; a
 * path elsewhere (a forged or stale composition) is never created, overwritten or removed.
 */
export function checkNeedPath(
  root: string,
  need: Pick<NeedResource, "id" | "module" | "path">,
): void {
  const path = need.path;
  const folder = `${root.replace(/\/+$/, "")}/secrets/${need.module}/`;
  if (
    !isAbsolute(path) ||
    normalize(path) !== path ||
    path.split("/").includes("..") ||
    !path.startsWith(folder) ||
    path.length === folder.length
  ) {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${need.id} is to be written at ${JSON.stringify(path)}, which is not inside ${need.module}'s secrets folder ${JSON.stringify(folder)}; the host writes declared files only there — correct the path in ${need.module}'s manifest (own-secrets, relative to that folder) and register it again`,
      { module: need.module, path },
    );
  }
}

/**
 * Writes the need's file. `known` says whether the host wrote this path before: a file the host
 * did not write is never overwritten (it may be the machine's own).
 */
export async function writeNeed(input: {
  readonly root: string;
  readonly need: NeedResource;
  readonly privateKey: KeyObject;
  readonly known: boolean;
}): Promise<void> {
  const { need } = input;
  checkNeedPath(input.root, need);
  if (need.sealed === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `${need.id} has no sealed content yet; the controller seals it once the node's presence shows its key — the module starts when it arrives`,
      { module: need.module, path: need.path },
    );
  }
  if (!input.known) await refuseForeignFile(need);
  const content = unseal(input.privateKey, need.sealed, need.id);
  const owner =
    need.user !== undefined && runningAsRoot() ? await lookupAccount(need.user) : undefined;
  await writeFileAtomic(need.path, content, {
    mode: 0o600,
    // Folders made for it may be passed through by the file's user, not listed: 0711.
    folderMode: 0o711,
    ...(owner === undefined ? {} : { owner: { uid: owner.uid, gid: owner.gid } }),
  });
}

/**
 * Refuses a path where a file stands that the host did not write (it may be the machine's own).
 * The host records a path as its own before it writes there, so a crash between the two does
 * not make its own file look foreign.
 */
export async function refuseForeignFile(need: NeedResource): Promise<void> {
  const there = await lstat(need.path).catch(() => undefined);
  if (there !== undefined) {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${need.id} is to be written at ${JSON.stringify(need.path)}, where a file the host did not write already is; move that file away or choose another path in ${need.module}'s manifest`,
      { module: need.module, path: need.path },
    );
  }
}

/**
 * Removes a need's file, only inside the module's secrets folder: a path recorded by an older
 * host outside it (when manifests could name any path) is left where it is.
 */
export async function removeNeed(
  root: string,
  record: { readonly module: string; readonly path: string },
): Promise<boolean> {
  try {
    checkNeedPath(root, { id: record.module, ...record });
  } catch {
    return false;
  }
  await rm(record.path, { force: true });
  return true;
}

/**
 * Machine accounts by name, from /etc/passwd: Node has no getpwnam. Used to run a process as
 * its user and to give a need file to that user.
 */
import { readFile } from "node:fs/promises";
import { ErrorCode, MeshError } from "@mesh/protocol";

export interface Account {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** The account `name`; NOT_FOUND when the machine has none by that name. */
export async function lookupAccount(
  name: string,
  options: { readonly passwdFile?: string } = {},
): Promise<Account> {
  const file = options.passwdFile ?? "/etc/passwd";
  const text = await readFile(file, "utf8");
  for (const line of text.split("\n")) {
    const [user, , uid, gid, , home] = line.split(":");
    if (user === name && uid !== undefined && gid !== undefined) {
      return { name, uid: Number(uid), gid: Number(gid), home: home ?? "/" };
    }
  }
  throw new MeshError(
    ErrorCode.NOT_FOUND,
    `the account ${JSON.stringify(name)} does not exist on this machine (${file}); create it (useradd ${name}) or correct the user in the module's composition`,
  );
}

/** Whether the host runs as root, and so may run processes as other users and chown files. */
export const runningAsRoot = (): boolean => process.getuid?.() === 0;

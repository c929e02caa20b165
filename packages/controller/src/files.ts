/** The controller's own files: JSON, mode 0600, written atomically so a crash leaves the old one. */
import { readFile } from "node:fs/promises";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { writeFileAtomic } from "@mesh/kit";

/** The file's JSON, or undefined when there is no file. */
export async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new MeshError(
      ErrorCode.INTERNAL,
      `cannot read ${path}: ${(error as Error).message}; check its owner and mode (0600, the controller's user)`,
      { path, cause: error },
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${path} is not JSON (${(error as Error).message}); it was damaged — restore it from a backup or move it away`,
      { path, cause: error },
    );
  }
}

export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(value, null, 1)}\n`);
}

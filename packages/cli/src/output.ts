/**
 * How verbs speak: plain lines for people, one JSON document with `--json` for scripts, errors on
 * stderr with their code, and exit codes scripts can rely on.
 */
import { ErrorCode, MeshError, isMeshError } from "@mesh/protocol";

/** Exit codes: 0 done, 1 failed, 2 the command line was wrong, 3 refused by a rule or the bus. */
export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  refused: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The exit code of each error code: a new code must be given one here (the type says so). */
const EXIT_OF: Record<ErrorCode, ExitCode> = {
  [ErrorCode.USAGE]: ExitCode.usage,
  [ErrorCode.INVALID_NAME]: ExitCode.usage,
  [ErrorCode.INVALID_INPUT]: ExitCode.usage,
  [ErrorCode.INVALID_KEY]: ExitCode.usage,
  [ErrorCode.MANIFEST_INVALID]: ExitCode.refused,
  [ErrorCode.COMPOSITION_REFUSED]: ExitCode.refused,
  [ErrorCode.PERMISSION_DENIED]: ExitCode.refused,
  [ErrorCode.REFUSED]: ExitCode.refused,
  [ErrorCode.ROOT_IN_USE]: ExitCode.refused,
  [ErrorCode.CREDENTIAL_EXPOSED]: ExitCode.refused,
  [ErrorCode.TLS_PIN_MISMATCH]: ExitCode.refused,
  [ErrorCode.CONFLICT]: ExitCode.refused,
  [ErrorCode.INVALID_VALUE]: ExitCode.failed,
  [ErrorCode.CREDENTIAL_INVALID]: ExitCode.failed,
  [ErrorCode.CONNECT_FAILED]: ExitCode.failed,
  [ErrorCode.NOT_FOUND]: ExitCode.failed,
  [ErrorCode.TIMEOUT]: ExitCode.failed,
  [ErrorCode.ABORTED]: ExitCode.failed,
  [ErrorCode.SERVER_NOT_FOUND]: ExitCode.failed,
  [ErrorCode.SERVER_UNSUPPORTED]: ExitCode.failed,
  [ErrorCode.SERVER_START_FAILED]: ExitCode.failed,
  [ErrorCode.SERVER_RELOAD_FAILED]: ExitCode.failed,
  [ErrorCode.ACCOUNT_UPDATE_FAILED]: ExitCode.failed,
  [ErrorCode.VIEW_UNPROTECTED]: ExitCode.usage,
  [ErrorCode.JETSTREAM_UNAVAILABLE]: ExitCode.failed,
  [ErrorCode.BUS_UNPROTECTED]: ExitCode.usage,
  [ErrorCode.BUS_SHAPE_CHANGED]: ExitCode.refused,
  [ErrorCode.LISTEN_FAILED]: ExitCode.failed,
  [ErrorCode.SOURCE_UNAVAILABLE]: ExitCode.failed,
  [ErrorCode.BUILD_FAILED]: ExitCode.failed,
  [ErrorCode.BUILD_MODULE_UNAVAILABLE]: ExitCode.failed,
  [ErrorCode.BUCKET_UNAVAILABLE]: ExitCode.failed,
  [ErrorCode.WATCH_ENDED]: ExitCode.failed,
  [ErrorCode.DIGEST_MISMATCH]: ExitCode.failed,
  [ErrorCode.ARCHIVE_REFUSED]: ExitCode.refused,
  [ErrorCode.BUS_UNAVAILABLE]: ExitCode.failed,
  [ErrorCode.PROCESS_EXITED]: ExitCode.failed,
  [ErrorCode.TOOLS_FAILED]: ExitCode.failed,
  [ErrorCode.HOST_HANDOVER]: ExitCode.failed,
  [ErrorCode.HOST_UPGRADE_FAILED]: ExitCode.failed,
  [ErrorCode.HOST_TOO_OLD]: ExitCode.refused,
  [ErrorCode.INTERNAL]: ExitCode.failed,
};

export function exitCodeOf(error: unknown): ExitCode {
  return isMeshError(error) ? EXIT_OF[error.code] : ExitCode.failed;
}

/** Prints an error the way the verb was asked to speak, and returns the exit code. */
export function reportError(error: unknown, json: boolean): ExitCode {
  const mesh = isMeshError(error)
    ? error
    : new MeshError(ErrorCode.INTERNAL, error instanceof Error ? error.message : String(error), {
        cause: error,
      });
  if (json) {
    process.stdout.write(`${JSON.stringify({ ok: false, error: mesh.toJSON() })}\n`);
  } else {
    process.stderr.write(`mesh: ${mesh.message} [${mesh.code}]\n`);
    // A stack is for whoever debugs the mesh, not for the operator: only when asked for.
    if (mesh.code === ErrorCode.INTERNAL) {
      const stack = error instanceof Error ? error.stack : undefined;
      if (process.env["MESH_DEBUG"] === "1" && stack !== undefined) {
        process.stderr.write(`${stack}\n`);
      } else {
        process.stderr.write(
          "mesh: this is a fault of the mesh, not of what you gave it; run again with MESH_DEBUG=1 for the detail and report it\n",
        );
      }
    }
  }
  return exitCodeOf(mesh);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

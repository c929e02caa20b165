/** The controller's options, files and pass report (controller.ts re-exports them). */
import type { MeshBus } from "@mesh/bus";
import type { AccountAuthority, ServerUser, UsersSink } from "@mesh/bus/server";

/** The files the controller keeps in its folder. */
export const ControllerFiles = {
  vaultKey: "vault.key",
  sealed: "sealed",
} as const;

export interface ControllerOptions {
  /** Connected as the controller (the bus's admin). */
  readonly bus: MeshBus;
  /** The controller's folder: vault key, issued users, join tokens, sealed values (all 0600). */
  readonly dir: string;
  /**
   * Users-list mode: where the full users list goes (`serverFolderSink(<root>/bus)`, or a
   * server in tests), and the users the broker does not issue but keeps in it (`mesh up`'s).
   */
  readonly sink?: UsersSink;
  readonly staticUsers?: () => Promise<readonly ServerUser[]>;
  /**
   * Accounts mode (decision 0080), for a bus the mesh owns: users are signed JWTs, taken away
   * by account updates; no sink and no static users. Exactly one of the two modes is given.
   */
  readonly accounts?: AccountAuthority;
  /**
   * Accounts mode: how often, at most, spent join users' revocations get an account update of
   * their own (60 s by default); a principal taken away is revoked at once whatever this is.
   */
  readonly joinRevocationsEveryMs?: number;
  /**
   * Accounts mode: how long a host's, runtime's or module's JWT lives before it expires; the
   * controller signs it again with a third left and delivers it (decision 0150). Absent: never
   * (the controller process, `mesh controller`, gives 6 hours).
   */
  readonly credentialLifetimeMs?: number;
  /**
   * A bus the mesh does not own (`mesh up --bus`), with the one login its operator gave: there is
   * no users list to write, and every credential issued is that login (the controller's own)
   * under its principal's name and inbox. The bus then holds the mesh's processes to what that
   * login may do, not to each principal's grants.
   */
  readonly sharedLogin?: boolean;
  /** The bus urls issued credentials name; the controller's own credential's by default. */
  readonly servers?: readonly string[];
  /** The artifact store sources are routed through; `mesh-artifacts` by default. */
  readonly artifactStore?: string;
  readonly log?: (line: string) => void;
  readonly now?: () => Date;
}

/** What one pass did, for tests and the log. */
export interface PassReport {
  readonly nodes: readonly string[];
  readonly written: readonly string[];
  readonly refused: readonly string[];
  readonly reloaded: boolean;
}

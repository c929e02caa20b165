/**
 * The principals the controller's broker issues credentials to: their kinds, what the controller
 * wants of one, the user a node's principal logs in as, and the shared login of a bus the mesh
 * does not own.
 */
import { hostGrant, renewalGrant } from "@mesh/core";
import {
  Principal,
  nodeModuleKey,
  type Credential,
  type Permissions as PermissionsType,
} from "@mesh/protocol";

export const PrincipalKind = {
  host: "host",
  runtime: "runtime",
  module: "module",
  join: "join",
  /** `mesh mcp --allow`: an mcp credential narrowed to some modules, kept until the root goes. */
  mcp: "mcp",
  /** `mesh view --listen`'s sessions (decision 0171): kept like mcp's, until the root goes. */
  view: "view",
  /** A node's renewal login, inside its host's credential (decision 0150). */
  renewal: "renewal",
} as const;
export type PrincipalKind = (typeof PrincipalKind)[keyof typeof PrincipalKind];

/** The one login of a bus the mesh does not own: a user and password, or a signed user. */
export type SharedLogin =
  | { readonly user: string; readonly password: string }
  | { readonly user: string; readonly jwt: string; readonly seed: string };

/** The login of `credential`, shared by every principal on a bus the mesh does not own. */
export function sharedLoginOf(credential: Credential): SharedLogin {
  if (credential.jwt !== undefined && credential.seed !== undefined) {
    return { user: credential.user, jwt: credential.jwt, seed: credential.seed };
  }
  return { user: credential.user, password: credential.password ?? "" };
}

/** A principal as the controller wants it now. */
export interface DesiredPrincipal {
  readonly user: string;
  readonly node: string;
  readonly module: string;
  readonly kind: PrincipalKind;
  readonly permissions: PermissionsType;
  readonly expiresAt?: string;
}

/** `<node>.<module>`: the bus user of a node's principal. */
export const principalUser = (node: string, module: string): string => nodeModuleKey(node, module);

/** The principal `<node>.<module>` of one of a node's own kinds (host, renewal). */
function ofNode(
  node: string,
  module: typeof Principal.host | typeof Principal.renewal,
  permissions: PermissionsType,
): DesiredPrincipal {
  return { user: principalUser(node, module), node, module, kind: module, permissions };
}

/** A node's host principal: `<node>.host` with exactly the host's grant. */
export const hostPrincipal = (node: string): DesiredPrincipal =>
  ofNode(node, Principal.host, hostGrant({ node }));

/** A node's renewal login: `<node>.renewal`, which may only ask for its host's credential. */
export const renewalPrincipal = (node: string): DesiredPrincipal =>
  ofNode(node, Principal.renewal, renewalGrant({ node }));

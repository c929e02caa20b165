/**
 * The joining side of `mesh.join`: a new node holds only the bus's url and a one-time token. It
 * connects as the token's join user (the token's secret is the password), presents the token, its
 * name and its public key, and gets back its host credential sealed to that key, which only it can
 * open. `mesh join` (a later verb) wraps this.
 */
import type { PeerCertificate } from "node:tls";
import type { KeyObject } from "node:crypto";
import { AuthorizationError, type Authenticator, type NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import {
  Credential,
  ErrorCode,
  JoinAnswer,
  MeshError,
  ReplyHeader,
  Subject,
  joinInbox,
  joinSealContext,
  joinUser,
  parseJoinToken,
  toReplyCode,
} from "@mesh/protocol";
import { abortable, toMeshError } from "./bus-errors.js";
import { unseal } from "./sealing.js";
import { nodeKeyPair } from "./server/nkey-codec.js";

export interface JoinOptions {
  readonly servers: readonly string[];
  readonly token: string;
  readonly node: string;
  /** The node's key pair; the public half is presented, the private one opens the answer. */
  readonly keys: { readonly publicKey: string; readonly privateKey: KeyObject };
  /** The bus certificate's SHA-256 fingerprint to pin, and its PEM, when the bus speaks TLS. */
  readonly fingerprint?: string;
  readonly ca?: string;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * How a token logs in: in accounts mode (decision 0080) its secret is the join user's nkey seed
 * and JWT, base64url; otherwise it is the join user's password.
 */
function joinLogin(
  id: string,
  secret: string,
): { authenticator: Authenticator } | { user: string; pass: string } {
  const [seed, jwt] = Buffer.from(secret, "base64url").toString("utf8").split("\n");
  if (seed !== undefined && jwt !== undefined && /^SU[A-Z2-7]{56}$/.test(seed)) {
    // Node's Ed25519, as a signed user's login (bus-login.ts): the client library's own (pure
    // JavaScript) took ~25 ms a join, and a joining fleet's logins timed out behind it.
    const keys = nodeKeyPair(seed);
    const authenticator: Authenticator = (nonce?: string) => ({
      jwt,
      nkey: keys.getPublicKey(),
      sig:
        nonce === undefined || nonce === ""
          ? ""
          : Buffer.from(keys.sign(new TextEncoder().encode(nonce))).toString("base64"),
    });
    return { authenticator };
  }
  return { user: joinUser(id), pass: secret };
}

/** Joins the mesh: returns the node's host credential (write it 0600 with writeCredential). */
export async function requestJoin(options: JoinOptions): Promise<Credential> {
  const parts = parseJoinToken(options.token);
  if (parts === undefined) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      "the join token is not of the shape <id>.<secret> that `mesh join-token` prints; copy it whole",
    );
  }
  const doing = `joining the mesh at ${options.servers.join(", ")} as ${options.node}`;
  const nc = await connectAsJoinUser(options, parts, doing);
  try {
    return await askToJoin(nc, options, doing);
  } finally {
    await nc.close().catch(() => undefined);
  }
}

interface JoinTls {
  readonly ca?: string;
  readonly checkServerIdentity: (host: string, cert: PeerCertificate) => Error | undefined;
}

/** TLS that trusts exactly the pinned certificate, or none when the bus speaks plain. */
function pinnedTls(options: JoinOptions): JoinTls | undefined {
  if (options.fingerprint === undefined) return undefined;
  return {
    ...(options.ca === undefined ? {} : { ca: options.ca }),
    checkServerIdentity: (_host: string, cert: PeerCertificate): Error | undefined =>
      cert.fingerprint256 === options.fingerprint
        ? undefined
        : new Error(`the bus's certificate ${cert.fingerprint256} is not the pinned one`),
  };
}

/** One connection as the token's join user; a refused token is REFUSED. */
async function connectAsJoinUser(
  options: JoinOptions,
  parts: { readonly id: string; readonly secret: string },
  doing: string,
): Promise<NatsConnection> {
  const tls = pinnedTls(options);
  try {
    return await abortable(
      connect({
        servers: [...options.servers],
        ...joinLogin(parts.id, parts.secret),
        name: `join.${options.node}`,
        inboxPrefix: joinInbox(parts.id),
        // One attempt: a refused token must not be retried forever.
        reconnect: false,
        timeout: options.timeoutMs ?? 5_000,
        ...(tls === undefined ? {} : { tls }),
      }),
      options.signal,
      doing,
    );
  } catch (error) {
    const mapped = toMeshError(error, { doing });
    // The bus refuses the join user once its token is used, expired or unknown (the broker
    // removes it): that is the token refused, as when the controller refuses it, so scripts see
    // one code for "get a new token" whichever of the two saw it first.
    const refused = error instanceof AuthorizationError;
    throw new MeshError(
      refused
        ? ErrorCode.REFUSED
        : mapped.code === ErrorCode.INTERNAL
          ? ErrorCode.CONNECT_FAILED
          : mapped.code,
      `${doing}: the bus did not take the token (${(error as Error).message}); a token works once ` +
        "and expires — ask the operator for a new one (`mesh join-token`)",
      { node: options.node, cause: error },
    );
  }
}

/** Presents the token, name and key on `mesh.join` and opens the credential sealed back. */
async function askToJoin(
  nc: NatsConnection,
  options: JoinOptions,
  doing: string,
): Promise<Credential> {
  const reply = await abortable(
    nc.request(
      Subject.join,
      JSON.stringify({
        token: options.token,
        node: options.node,
        publicKey: options.keys.publicKey,
      }),
      { timeout: options.timeoutMs ?? 10_000 },
    ),
    options.signal,
    doing,
  ).catch((error: unknown) => {
    throw toMeshError(error, { doing, subject: Subject.join });
  });
  const code = reply.headers?.get(ReplyHeader.code);
  if (code !== undefined && code !== "") {
    throw new MeshError(
      toReplyCode(code),
      reply.headers?.get("Nats-Service-Error") ?? `${doing}: refused`,
      { node: options.node, subject: Subject.join },
    );
  }
  const answer = JoinAnswer.safeParse(reply.json());
  if (!answer.success || answer.data.node !== options.node) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${doing}: the answer is not a join answer for ${options.node}; the controller is broken or this is not the mesh`,
      { node: options.node },
    );
  }
  const opened = unseal(options.keys.privateKey, answer.data.sealed, joinSealContext(options.node));
  const credential = Credential.safeParse(JSON.parse(opened.toString("utf8")));
  if (!credential.success) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `${doing}: the sealed answer is not a credential; the controller is broken`,
      { node: options.node },
    );
  }
  return credential.data;
}

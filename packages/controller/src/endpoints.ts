/**
 * The controller's endpoints that change users: joins, join tokens, narrowed mcp credentials and
 * the view's.
 * Each takes the controller's lock, so the users list is never written by two at once.
 */
import {
  ErrorCode,
  JoinRequest,
  MeshError,
  Principal,
  Subject,
  joinInbox,
  hostCredentialContext,
  joinSealContext,
  joinUser,
  mcpSealContext,
  ViewPrincipal,
  viewSealContext,
  type JoinAnswer,
  type Permissions,
  type RenewAnswer,
} from "@mesh/protocol";
import { delay } from "@mesh/kit";
import { allowedModules, mcpGrant, mcpPrincipal, viewGrant } from "@mesh/core";
import { flush, seal, type EndpointSpec, type MeshBus, type Request } from "@mesh/bus";
import { PrincipalKind, principalUser, type Broker } from "./broker.js";
import { ensureHost, hostCredentialText } from "./need-content.js";
import {
  JoinToken,
  McpCredential,
  ViewCredential,
  type AnswerOf,
  type AskOf,
} from "./controller-api.js";
import type { Fleet } from "./fleet.js";
import { DEFAULT_JOIN_TOKEN_TTL_MS, type JoinTokens } from "./join-tokens.js";
import { answering, readAsk } from "./ask-input.js";

export interface EndpointContext {
  readonly bus: MeshBus;
  readonly broker: Broker;
  readonly fleet: Fleet;
  readonly tokens: JoinTokens;
  /** Runs `fn` under the controller's lock (one pass or one user change at a time). */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  now(): Date;
  /** A pass is due. */
  poke(): void;
}

/** The endpoints that issue users: joins, join tokens, narrowed mcp credentials. */
export function userEndpoints(context: () => EndpointContext): EndpointSpec[] {
  return [
    { name: "join", subject: Subject.join, handler: (r) => answerJoin(context(), r) },
    {
      name: "join-token",
      subject: JoinToken.subject,
      handler: (r) => answerJoinToken(context(), r),
    },
    answering(McpCredential, (ask) => answerMcpCredential(context(), ask)),
    answering(ViewCredential, (ask) => answerViewCredential(context(), ask)),
    { name: "renew", subject: `${Subject.renew}.*`, handler: (r) => answerRenew(context(), r) },
  ];
}

/**
 * `mesh.renew.<node>`: a host whose own JWT expired while it was away asks, with its renewal
 * login (whose grant names only this subject of its node), for its current credential; it is
 * sealed to the node's key in its presence, so only that node opens it (decision 0150).
 */
export async function answerRenew(c: EndpointContext, request: Request): Promise<RenewAnswer> {
  const node = request.subject.slice(Subject.renew.length + 1);
  return c.exclusive(async () => {
    const presence = c.fleet.presenceOf(node);
    if (!c.broker.renews || c.broker.get(principalUser(node, Principal.host)) === undefined) {
      throw new MeshError(
        ErrorCode.NOT_FOUND,
        `${node} has no host credential that expires here; join it again (mesh join) if it cannot log in`,
        { node },
      );
    }
    if (presence === undefined) {
      throw new MeshError(
        ErrorCode.NOT_FOUND,
        `${node} has no presence in mesh-presence, so there is no key to seal its credential to; join it again (mesh join)`,
        { node },
      );
    }
    // Renewed first if due: the pass that would have may not have come yet.
    for (const renewed of await c.broker.renewDue()) c.fleet.touch(renewed);
    await c.broker.commit();
    c.poke();
    const text = hostCredentialText(c.broker, node);
    return { node, sealed: seal(presence.publicKey, text, hostCredentialContext(node)) };
  });
}

/** mesh.join: a new node with a join token gets its host credential, sealed to its key. */
export async function answerJoin(c: EndpointContext, request: Request): Promise<JoinAnswer> {
  const { token, node, publicKey } = readAsk(
    JoinRequest,
    request,
    "a join request",
    "{token, node, publicKey}",
  );
  const answer = await c.exclusive(async () => {
    const host = principalUser(node, Principal.host);
    if (c.broker.get(host) !== undefined || c.fleet.presenceOf(node) !== undefined) {
      throw new MeshError(
        ErrorCode.REFUSED,
        `the node name ${JSON.stringify(node)} is taken: a node of that name is in the mesh already; join under another name (the token was not used)`,
        { node },
      );
    }
    // Sealing to the key first: a key that is not X25519 is refused before the token is spent.
    try {
      seal(publicKey, "check", joinSealContext(node));
    } catch (error) {
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `${(error as Error).message} (the join's publicKey)`,
        {
          node,
          cause: error,
        },
      );
    }
    await c.tokens.take(token, node, c.now());
    await ensureHost(c.broker, node);
    await c.broker.commit();
    const credential = hostCredentialText(c.broker, node);
    return { node, sealed: seal(publicKey, credential, joinSealContext(node)) };
  });
  // The join user goes once the answer is out: the next pass's reload drops it.
  setImmediate(() => {
    void flush(c.bus)
      .catch(() => undefined)
      .then(() => c.poke());
  });
  return answer;
}

/** The operator's ask for a join token: a one-time join user that may only ask mesh.join. */
export async function answerJoinToken(
  c: EndpointContext,
  request: Request,
): Promise<AnswerOf<typeof JoinToken>> {
  const parsed = JoinToken.ask.safeParse(request.json() ?? {});
  if (!parsed.success) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `${JoinToken.what} is ${JoinToken.shape}: ${parsed.error.issues[0]?.message ?? ""}`,
    );
  }
  const ttlMs =
    parsed.data.ttlSeconds === undefined
      ? DEFAULT_JOIN_TOKEN_TTL_MS
      : parsed.data.ttlSeconds * 1000;
  return c.exclusive(async () => {
    const made = await c.tokens.create({ ttlMs, now: c.now() });
    const user = joinUser(made.id);
    await c.broker.ensure(
      {
        user,
        node: "join",
        module: made.id,
        kind: PrincipalKind.join,
        // May ask mesh.join and hear its own inbox; nothing else.
        permissions: {
          publish: { allow: [Subject.join] },
          subscribe: { allow: [`${joinInbox(made.id)}.>`] },
        },
        expiresAt: made.expiresAt,
      },
      made.secret,
    );
    await c.broker.commit();
    // Accounts mode: the token carries the join user's seed and JWT (there is no password).
    const token = c.broker.signed
      ? await c.tokens.replaceSecret(made.id, c.broker.joinSecret(user))
      : made.token;
    // When it expires unused, a pass drops its join user even if nothing else moves by then.
    void delay(ttlMs + 1_000, { ref: false }).then(() => c.poke());
    return { token, id: made.id, expiresAt: made.expiresAt };
  });
}

/**
 * The operator's ask for an mcp credential narrowed to some modules (`mesh mcp --allow`): the
 * user `<node>.mcp-<digest>` with `mcpGrant({ modules })`, issued once per allow-set on the
 * controller's node and kept, sealed to the asker's key. The bus then holds it to those modules'
 * tools, whatever the server in front of it offers.
 */
export async function answerMcpCredential(
  c: EndpointContext,
  ask: AskOf<typeof McpCredential>,
): Promise<AnswerOf<typeof McpCredential>> {
  const modules = allowedModules(ask.modules);
  const principal = mcpPrincipal(modules);
  const node = c.bus.credential.node;
  const sealed = await issueSealed(c, {
    principal,
    kind: PrincipalKind.mcp,
    permissions: mcpGrant({ node, modules }),
    publicKey: ask.publicKey,
    context: mcpSealContext(principal),
  });
  return { principal, modules, sealed };
}

/**
 * Issues (or keeps) the principal on the controller's node and answers its credential sealed to
 * the asker's key; a key that is not X25519 is refused before anything is issued.
 */
async function issueSealed(
  c: EndpointContext,
  input: {
    readonly principal: string;
    readonly kind: PrincipalKind;
    readonly permissions: Permissions;
    readonly publicKey: string;
    readonly context: string;
  },
): Promise<string> {
  const node = c.bus.credential.node;
  try {
    seal(input.publicKey, "check", input.context);
  } catch (error) {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `${(error as Error).message} (the ask's publicKey)`,
      { cause: error },
    );
  }
  return c.exclusive(async () => {
    const user = principalUser(node, input.principal);
    await c.broker.ensure({
      user,
      node,
      module: input.principal,
      kind: input.kind,
      permissions: input.permissions,
    });
    await c.broker.commit();
    const credential = `${JSON.stringify(c.broker.credential(user))}\n`;
    return seal(input.publicKey, credential, input.context);
  });
}

/**
 * `mesh view --listen`'s ask: the credential of `view` (the operator's grant) or `view-read`
 * (reads only) on the controller's node, sealed to the asker's key (decision 0171). Issued once
 * per access and kept, like a narrowed mcp credential.
 */
export async function answerViewCredential(
  c: EndpointContext,
  ask: AskOf<typeof ViewCredential>,
): Promise<AnswerOf<typeof ViewCredential>> {
  const principal = ViewPrincipal[ask.access];
  const sealed = await issueSealed(c, {
    principal,
    kind: PrincipalKind.view,
    permissions: viewGrant({ node: c.bus.credential.node, access: ask.access }),
    publicKey: ask.publicKey,
    context: viewSealContext(principal),
  });
  return { principal, sealed };
}

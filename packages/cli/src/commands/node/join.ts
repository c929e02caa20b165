/**
 * `mesh join <bus-url> --token T --node N --root DIR`: makes this machine (or another root on it)
 * a node of a mesh. The node key is made once and kept at `<root>/node.key`; the token is
 * presented with its public half, and the host credential comes back sealed to it and is written
 * 0600 at `<root>/credentials/host.json`. Then the host runs in the foreground, as `mesh host`
 * would, until Ctrl-C. A root that already holds a credential for that node joins no more: it is
 * reused, so restarting `mesh join` needs no new token.
 */
import { join, resolve } from "node:path";
import { Option, type Command } from "commander";
import { askJoinToken } from "@mesh/controller";
import {
  fetchPinnedCertificate,
  loadOrCreateNodeKeys,
  readCredential,
  requestJoin,
  writeCredential,
} from "@mesh/bus";
import {
  ErrorCode,
  MeshError,
  Principal,
  checkName,
  pinJoinToken,
  unpinJoinToken,
  type Credential,
} from "@mesh/protocol";
import { isLoopback, parseBusUrl } from "../../up/foreign-bus.js";
import { ExitCode, printJson } from "../../output.js";
import { act, connect, meshVerb, out, positiveNumber, type MeshOptions } from "../../verb.js";
import { host, leaveWhenDone, machineOptions, type MachineOptions } from "./host.js";

export interface JoinCliOptions extends MachineOptions {
  readonly token?: string;
  readonly node: string;
  readonly root: string;
  readonly credentialOut?: string;
  /** commander's `--no-run`: false when given. */
  readonly run?: boolean;
  readonly json?: boolean;
  /** Stop the node's processes when the host stops (a node run in the foreground, not by a supervisor). */
  readonly stopProcessesOnExit?: boolean;
  /** Join a bus beyond loopback whose token pins no certificate (plain TCP). */
  readonly insecure?: boolean;
}

export async function joinVerb(busUrl: string, options: JoinCliOptions): Promise<ExitCode> {
  const node = checkName("node", options.node);
  const servers = busServers(busUrl);
  const root = resolve(options.root);
  const credentialFile = resolve(
    options.credentialOut ?? join(root, "credentials", `${Principal.host}.json`),
  );
  const say = (line: string): void => {
    if (options.json !== true) process.stderr.write(`${line}\n`);
  };
  const joined = await ensureJoined({ node, servers, root, credentialFile, options, say });

  if (options.run === false) {
    if (options.json === true)
      printJson({ ok: true, node, root, credential: credentialFile, joined });
    else process.stdout.write(`${credentialFile}\n`);
    return ExitCode.ok;
  }
  if (options.json === true)
    printJson({ ok: true, node, root, credential: credentialFile, joined, running: true });
  const stopAll = options.stopProcessesOnExit === true;
  say(
    `running the host of ${node} in ${root}; Ctrl-C stops it` +
      (stopAll ? " and its processes" : " (its processes keep running)"),
  );
  const code = await host({
    node,
    root,
    credential: credentialFile,
    ...(stopAll ? { stopProcessesOnExit: true } : {}),
    ...(options.account === undefined ? {} : { account: options.account }),
    ...(options.adopted === true ? { adopted: true } : {}),
    ...(options.toolsIdle === undefined ? {} : { toolsIdle: options.toolsIdle }),
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
  });
  say(`the host of ${node} stopped`);
  return code;
}

/** The bus urls `mesh join` was given, comma-separated; USAGE when one is not a bus url. */
function busServers(busUrl: string): string[] {
  const servers = busUrl
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (servers.length === 0 || servers.some((s) => !/^(nats|tls|wss?):\/\/|^[^/]+:\d+$/.test(s))) {
    throw new MeshError(
      ErrorCode.USAGE,
      `${JSON.stringify(busUrl)} is not a bus url; give the one \`mesh join-token\` printed, e.g. nats://10.0.0.5:4222`,
    );
  }
  return servers;
}

/**
 * Makes sure the root holds the node's host credential: the one kept there (its servers updated
 * when the bus moved), else one the token gets. Says whether this call joined.
 */
async function ensureJoined(at: {
  readonly node: string;
  readonly servers: string[];
  readonly root: string;
  readonly credentialFile: string;
  readonly options: JoinCliOptions;
  readonly say: (line: string) => void;
}): Promise<boolean> {
  const { node, servers, root, credentialFile, options, say } = at;
  const kept = await readCredential(credentialFile).catch((error: unknown) => {
    // Missing is the common case (a first join); a file that is there but broken or readable by
    // others is not silently replaced: its refusal says what to do.
    if (error instanceof MeshError && error.code === ErrorCode.CREDENTIAL_INVALID) return undefined;
    throw error;
  });
  if (kept !== undefined && kept.node === node && kept.module === Principal.host) {
    // The user and password stay the node's; only where the bus is may have moved. The servers
    // the controller named at the join stay too (after the ones given): a cluster's other
    // servers are where the node fails over to, though the line typed names one.
    const merged = [...new Set([...servers, ...kept.servers])];
    if (kept.servers.join(",") !== merged.join(","))
      await writeCredential(credentialFile, { ...kept, servers: merged });
    say(`${node} already joined: using its host credential ${credentialFile}`);
    return false;
  }
  if (kept !== undefined) {
    throw new MeshError(
      ErrorCode.REFUSED,
      `${credentialFile} holds the credential of ${kept.node}'s ${kept.module}, not of node ${node}; join ${kept.node} again, or give another --root or --credential-out`,
      { node, path: credentialFile },
    );
  }
  if (options.token === undefined || options.token === "") {
    throw new MeshError(
      ErrorCode.USAGE,
      `${root} holds no credential for ${node}, so joining needs --token; ask the mesh's operator for one (\`mesh join-token\`)`,
      { node },
    );
  }
  const keys = await loadOrCreateNodeKeys(join(root, "node.key"));
  const credential = await joinPinned(
    servers,
    options.token,
    node,
    keys,
    options.insecure === true,
  );
  await writeCredential(credentialFile, credential);
  say(`${node} joined the mesh at ${servers.join(", ")}; its host credential is ${credentialFile}`);
  return true;
}

/**
 * Joins with the pin the token carries: the bus's certificate is read and held to it before the
 * token's secret is sent (tls-pin.ts), and the credential that comes back pins it too. A token
 * without a pin is a bus without TLS: refused beyond loopback unless `insecure`.
 */
async function joinPinned(
  servers: readonly string[],
  given: string,
  node: string,
  keys: Awaited<ReturnType<typeof loadOrCreateNodeKeys>>,
  insecure: boolean,
): Promise<Credential> {
  const { token, fingerprint } = unpinJoinToken(given);
  if (fingerprint === undefined) {
    const remote = servers.filter((s) => !isLoopback(parseBusUrl(s)?.hostname ?? ""));
    if (remote.length > 0 && !insecure) {
      throw new MeshError(
        ErrorCode.BUS_UNPROTECTED,
        `the token pins no certificate, so joining ${remote.join(", ")} would send its secret and then the node's password in clear; ` +
          "ask for a token of a mesh that listens over TLS (mesh up --listen ADDR; its tokens end in the certificate's SHA-256), or say --insecure if the network is yours alone",
        { node },
      );
    }
    return requestJoin({ servers, token, node, keys });
  }
  const ca = await fetchPinnedCertificate(servers[0] ?? "", fingerprint);
  const credential = await requestJoin({ servers, token, node, keys, fingerprint, ca });
  return { ...credential, fingerprint, ca };
}

export function registerJoinVerbs(program: Command): void {
  machineOptions(program.command("join"))
    .description(
      "Make this machine (or another root on it) a node of a mesh, then run its host until Ctrl-C.",
    )
    .argument(
      "<bus-url>",
      "the mesh's bus, e.g. nats://10.0.0.5:4222 (as `mesh join-token` prints)",
    )
    .option("--token <token>", "a one-time token from `mesh join-token` (not needed once joined)")
    .requiredOption("--node <name>", "this node's name")
    .requiredOption("--root <dir>", "where this node keeps its key, credential, bundles and state")
    .option(
      "--credential-out <file>",
      "where to write the host credential (default <root>/credentials/host.json)",
    )
    .option("--no-run", "only join: print the credential's path and exit")
    .option(
      "--insecure",
      "join a bus beyond this machine whose token pins no certificate (plain TCP)",
    )
    .option(
      "--stop-processes-on-exit",
      "stop the node's processes when its host stops (by default they keep running, for the next host to adopt)",
    )
    .option("--json", "print the outcome as JSON")
    .action(async (busUrl: string, options: JoinCliOptions) => {
      process.exitCode = await joinVerb(busUrl, options);
      if (options.run !== false) leaveWhenDone(process.exitCode);
    });

  act(
    meshVerb(
      program,
      "join-token",
      "Make a one-time token a new node joins the mesh with (mesh join).",
    ).addOption(
      new Option("--ttl <seconds>", "how long it works (default 3600, at most a week)").argParser(
        positiveNumber("--ttl", "3600", 7 * 24 * 3600),
      ),
    ),
    joinTokenVerb,
  );
}

async function joinTokenVerb(options: MeshOptions & { ttl?: number }): Promise<ExitCode> {
  await using bus = await connect(options);
  const asked = await askJoinToken(
    bus,
    options.ttl === undefined ? {} : { ttlSeconds: options.ttl },
  );
  // A bus over TLS: the token carries its certificate's fingerprint, which `mesh join` pins.
  const { fingerprint } = bus.credential;
  const made =
    fingerprint === undefined
      ? asked
      : { ...asked, token: pinJoinToken(asked.token, fingerprint), fingerprint };
  if (options.json === true) printJson({ ok: true, ...made });
  else
    out(
      `${made.token}\n\nIt works once, until ${made.expiresAt}. On the new machine:\n` +
        `  mesh join ${bus.credential.servers.join(",") || "<bus-url>"} --token ${made.token} --node <name>`,
    );
  return ExitCode.ok;
}

/**
 * Speaks to a mesh the way the stock `nats` CLI does with a context `mesh context` wrote: a plain
 * connection with the context's url, its user and password or its `.creds` file (accounts mode), and
 * NATS's default inbox (no mesh
 * helpers, no inbox prefix unless the context names one), and the CLI's own calls: `kv ls` lists
 * bucket streams, `kv get` reads the stream's info and then gets the key (directly when the stream
 * allows it, as the Go client does), `stream ls` lists streams, `micro ls` asks `$SRV.INFO`, and
 * `req` sends a request. For tests that the standard tooling works against the mesh's grants.
 */
import { readFile } from "node:fs/promises";
import { connect } from "@nats-io/transport-node";
import { credsAuthenticator } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Svcm } from "@nats-io/services";

export interface StockContext {
  readonly url: string;
  readonly user?: string;
  readonly password?: string;
  /** Accounts mode: the `.creds` file (user JWT and nkey seed), as the nats CLI reads it. */
  readonly creds?: string;
  readonly inbox_prefix?: string;
}

export interface StockSession extends AsyncDisposable {
  /** `nats kv ls`: the buckets' names. */
  kvLs(): Promise<string[]>;
  /** `nats kv get <bucket> <key>`: the value as text, or undefined when there is none. */
  kvGet(bucket: string, key: string): Promise<string | undefined>;
  /** `nats stream ls`: the streams' names. */
  streamLs(): Promise<string[]>;
  /** `nats micro ls`: each service's name, version and endpoint subjects. */
  microLs(): Promise<{ name: string; version: string; subjects: string[] }[]>;
  /** `nats req <subject> <body>`: the reply as text. */
  req(subject: string, body: string): Promise<string>;
  /**
   * Subscribes to `subject` (wildcards allowed, as `nats sub` does) while `during` runs, and
   * returns the subjects of what arrived.
   */
  sub(subject: string, during: () => Promise<unknown>): Promise<string[]>;
  /** The inbox prefix the connection uses (NATS's default is `_INBOX`). */
  readonly inbox: string;
}

export async function readStockContext(path: string): Promise<StockContext> {
  return JSON.parse(await readFile(path, "utf8")) as StockContext;
}

export async function stockSession(context: StockContext): Promise<StockSession> {
  const auth =
    context.creds === undefined
      ? { user: context.user ?? "", pass: context.password ?? "" }
      : { authenticator: credsAuthenticator(await readFile(context.creds)) };
  const nc = await connect({
    servers: context.url.split(","),
    ...auth,
    ...(context.inbox_prefix === undefined ? {} : { inboxPrefix: context.inbox_prefix }),
  });
  // Like the CLI: the default JetStream manager checks the API first ($JS.API.INFO); made when a
  // JetStream command first needs it, so a credential without JetStream can still `req`.
  let manager: Awaited<ReturnType<typeof jetstreamManager>> | undefined;
  const jsm = async () => (manager ??= await jetstreamManager(nc));
  return {
    inbox: context.inbox_prefix ?? "_INBOX",
    kvLs: async () => {
      const names: string[] = [];
      for await (const status of new Kvm(nc).list()) names.push(status.bucket);
      return names.sort();
    },
    kvGet: async (bucket, key) => {
      const info = await (await jsm()).streams.info(`KV_${bucket}`);
      const kv = await new Kvm(nc).open(bucket, { allow_direct: info.config.allow_direct });
      const entry = await kv.get(key);
      return entry === null || entry.operation !== "PUT" ? undefined : entry.string();
    },
    streamLs: async () => {
      const names: string[] = [];
      for await (const info of (await jsm()).streams.list()) names.push(info.config.name);
      return names.sort();
    },
    microLs: async () => {
      const out: { name: string; version: string; subjects: string[] }[] = [];
      const replies = await new Svcm(nc)
        .client({ strategy: "stall", stall: 300, maxWait: 3_000 })
        .info();
      for await (const info of replies) {
        out.push({
          name: info.name,
          version: info.version,
          subjects: (info.endpoints ?? []).map((e) => e.subject),
        });
      }
      return out.sort((a, b) => a.name.localeCompare(b.name));
    },
    sub: async (subject, during) => {
      const seen: string[] = [];
      const subscription = nc.subscribe(subject, {
        callback: (_e, msg) => {
          seen.push(msg.subject);
        },
      });
      await nc.flush();
      try {
        await during();
        await nc.flush();
      } finally {
        subscription.unsubscribe();
      }
      return seen;
    },
    req: async (subject, body) => (await nc.request(subject, body, { timeout: 10_000 })).string(),
    [Symbol.asyncDispose]: async () => {
      await nc.close();
    },
  };
}

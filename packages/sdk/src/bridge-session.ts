/**
 * One program's connection to the bridge (decision 0161): JSON lines both ways. The program asks
 * `{id, op, …}` and is answered `{id, ok: true, value}` or `{id, ok: false, code, message}`; the
 * bridge pushes `{event: "config", watch, value | refused}` for a watch and
 * `{event: "call", call, tool, input, timeoutMs}` for a tool call, which the program answers with
 * `{op: "reply", call, ok, value | code, message}`.
 */
import type { Socket } from "node:net";
import { z } from "zod";
import { request, serve, type MeshBus, type Served } from "@mesh/bus";
import {
  BoundKey,
  CallHeader,
  ErrorCode,
  MESH_VERSION,
  MeshError,
  ReplyCode,
  TOOL_NAME_PATTERN,
  provisionModuleSubject,
  toolSubject,
  type ConditionLevel,
} from "@mesh/protocol";
import type { ProcessMesh } from "./process.js";

/** The longest a forwarded tool call waits for the program's reply. */
const MAX_CALL_MS = 5 * 60_000;
const DEFAULT_CALL_MS = 30_000;

/** The tools a program serves: names as tool names go, JSON Schemas as they are. */
const ServedTools = z
  .array(
    z.object({
      name: z.string().regex(TOOL_NAME_PATTERN),
      description: z.string().max(10_000),
      input: z.unknown().optional(),
      output: z.unknown().optional(),
    }),
  )
  .min(1);

type Ask = { readonly id: number; readonly op: string } & Record<string, unknown>;

export class BridgeSession {
  readonly #bus: MeshBus;
  readonly #mesh: ProcessMesh;
  readonly #connection: Socket;
  readonly #log: (line: string) => void;
  readonly #closing = new AbortController();
  readonly #calls = new Map<number, (reply: Record<string, unknown>) => void>();
  #nextCall = 1;
  #served: Served | undefined;

  constructor(options: {
    bus: MeshBus;
    mesh: ProcessMesh;
    connection: Socket;
    log: (line: string) => void;
  }) {
    this.#bus = options.bus;
    this.#mesh = options.mesh;
    this.#connection = options.connection;
    this.#log = options.log;
  }

  take(line: string): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line) as Record<string, unknown>;
    } catch {
      this.#log(`a line from the program is not JSON: ${line.slice(0, 200)}`);
      return;
    }
    if (message.op === "reply" && typeof message.call === "number") {
      this.#calls.get(message.call)?.(message);
      return;
    }
    if (typeof message.id !== "number" || typeof message.op !== "string") {
      this.#log(`a message from the program has no id or op: ${line.slice(0, 200)}`);
      return;
    }
    const ask = message as Ask;
    this.#answer(ask).then(
      (value) => this.#send({ id: ask.id, ok: true, value: value ?? null }),
      (error: unknown) =>
        this.#send({
          id: ask.id,
          ok: false,
          code: error instanceof MeshError ? error.code : ErrorCode.INTERNAL,
          message: error instanceof Error ? error.message : String(error),
        }),
    );
  }

  async close(): Promise<void> {
    this.#closing.abort();
    for (const reply of this.#calls.values())
      reply({ ok: false, code: ReplyCode.INTERNAL, message: "the module's program went away" });
    await this.#served?.stop();
  }

  #send(message: unknown): void {
    if (this.#connection.writable) this.#connection.write(`${JSON.stringify(message)}\n`);
  }

  async #answer(ask: Ask): Promise<unknown> {
    const mesh = this.#mesh;
    const text = (field: string): string => {
      const value = ask[field];
      if (typeof value !== "string")
        throw new MeshError(ErrorCode.INVALID_INPUT, `${ask.op} needs ${field}, a string`);
      return value;
    };
    switch (ask.op) {
      case "hello":
        return { module: mesh.module, node: mesh.node, version: MESH_VERSION };
      case "config.get":
        return mesh.config.get(text("key") as never);
      case "config.watch":
        void this.#watch(text("key"), ask.watch);
        return null;
      case "state.get":
        return mesh.state(text("state")).get(text("key"));
      case "state.put":
        return mesh.state(text("state")).put(text("key"), ask.value);
      case "state.delete":
        return mesh.state(text("state")).delete(text("key"));
      case "state.keys":
        return mesh
          .state(text("state"))
          .keys(typeof ask.filter === "string" ? ask.filter : undefined);
      case "condition":
        return mesh.condition(text("name"), text("level") as ConditionLevel, text("message"));
      case "keeps":
        mesh.keeps(ask.states as { name: string; readable: boolean }[]);
        return null;
      case "call":
        return mesh.call(text("tool"), ask.input ?? {}, {
          ...(typeof ask.node === "string" ? { node: ask.node } : {}),
          ...(typeof ask.timeoutMs === "number" ? { timeoutMs: ask.timeoutMs } : {}),
        });
      case "serve":
        return this.#serve(ask.tools);
      default:
        throw new MeshError(
          ErrorCode.INVALID_INPUT,
          `the bridge knows no op ${JSON.stringify(ask.op)}`,
        );
    }
  }

  async #watch(key: string, watch: unknown): Promise<void> {
    try {
      for await (const item of this.#mesh.config.watch(key as never)) {
        if (this.#closing.signal.aborted) return;
        this.#send({ event: "config", watch, ...item });
      }
    } catch (error) {
      this.#send({ event: "config", watch, refused: String(error) });
    }
  }

  /** Serves the program's tools as the module's NATS service, as the runtime serves a module's. */
  async #serve(asked: unknown): Promise<{ tools: number }> {
    const parsed = ServedTools.safeParse(asked);
    if (!parsed.success)
      throw new MeshError(
        ErrorCode.INVALID_INPUT,
        `serve needs tools: [{name, description, input}]: ${parsed.error.issues.map((i) => `tools.${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    const tools = parsed.data;
    await this.#served?.stop();
    const { module, node } = this.#mesh;
    this.#served = await serve(this.#bus, {
      name: module,
      version: await this.#version(),
      description: `the tools of ${module} on ${node}`,
      metadata: { node, module },
      endpoints: tools.map((tool) => ({
        name: tool.name,
        subject: toolSubject(node, module, tool.name),
        metadata: {
          description: tool.description,
          input: JSON.stringify(tool.input ?? { type: "object" }),
          ...(tool.output === undefined ? {} : { output: JSON.stringify(tool.output) }),
        },
        handler: (req) =>
          this.#forward(tool.name, req.json(), req.headers.get(CallHeader.timeoutMs)),
      })),
      onRejected: (why, subject) => this.#log(`rejected a message on ${subject}: ${why}`),
      onInternalError: (error, subject) => this.#log(`${subject}: ${String(error)}`),
    });
    return { tools: tools.length };
  }

  /** The module's build as a service version (`0.0.0+<build>`), as the runtime reports it. */
  async #version(): Promise<string> {
    try {
      const answer = (await request(
        this.#bus,
        provisionModuleSubject(this.#mesh.node, this.#mesh.module),
        { kind: "bound", key: BoundKey.build },
      )) as { value?: unknown };
      return typeof answer.value === "string" && /^[0-9A-Za-z-]+$/.test(answer.value)
        ? `0.0.0+${answer.value}`
        : MESH_VERSION;
    } catch {
      return MESH_VERSION;
    }
  }

  #forward(tool: string, input: unknown, timeout: string | undefined): Promise<unknown> {
    const asked = Number(timeout);
    const timeoutMs =
      Number.isFinite(asked) && asked > 0 ? Math.min(asked, MAX_CALL_MS) : DEFAULT_CALL_MS;
    const call = this.#nextCall++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#calls.delete(call);
        reject(new MeshError(ReplyCode.TIMEOUT, `${tool} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#calls.set(call, (reply) => {
        clearTimeout(timer);
        this.#calls.delete(call);
        if (reply.ok === true) resolve(reply.value ?? null);
        else {
          const code =
            typeof reply.code === "string" && Object.hasOwn(ReplyCode, reply.code)
              ? reply.code
              : ReplyCode.INTERNAL;
          reject(
            new MeshError(
              code as ReplyCode,
              typeof reply.message === "string" ? reply.message : `${tool} failed`,
            ),
          );
        }
      });
      this.#send({ event: "call", call, tool, input, timeoutMs });
    });
  }
}

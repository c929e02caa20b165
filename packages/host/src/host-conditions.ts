/**
 * The conditions a host says of its own node about its own build (decisions 0200, 0202): a host
 * build that did not take the node over (`mesh-host/upgrade-<node>`), and a composition the host
 * is too old for (`mesh-host/host-version-<node>`); each resolved once its cause ends. Said as soon
 * as the bus is there, and again when it comes back, until it is heard.
 */
import { sayCondition } from "@mesh/bus";
import {
  HOST_MODULE,
  MESH_VERSION,
  hostUpgradeCondition,
  hostVersionCondition,
} from "@mesh/protocol";
import type { HostVoice } from "./host-options.js";

export const HostCondition = { upgrade: "upgrade", version: "version" } as const;
export type HostCondition = (typeof HostCondition)[keyof typeof HostCondition];

interface Saying {
  readonly message: string;
  readonly resolved: boolean;
}

export class HostConditions {
  readonly #voice: HostVoice;
  /** What is to be said (or was said last), by condition. */
  readonly #now = new Map<HostCondition, Saying>();
  /** Whether what stands was heard by the bus. */
  readonly #heard = new Set<HostCondition>();

  constructor(voice: HostVoice) {
    this.#voice = voice;
  }

  /** Says `message` as the condition (an error, open until resolved). */
  say(which: HostCondition, message: string): void {
    const before = this.#now.get(which);
    if (before?.message === message && !before.resolved) return;
    this.#voice.log(message);
    this.#now.set(which, { message, resolved: false });
    this.#heard.delete(which);
    void this.flush();
  }

  /**
   * Its cause ended: said resolved when it was said open — or, with `unknown`, when this process
   * has said nothing of it yet (a host that took the node over cannot know what the one before it
   * said).
   */
  resolve(which: HostCondition, message: string, unknown = false): void {
    const before = this.#now.get(which);
    if (before === undefined ? !unknown : before.resolved) return;
    this.#now.set(which, { message, resolved: true });
    this.#heard.delete(which);
    void this.flush();
  }

  /** This host resumed after `failed` did not take its node over. */
  resumedAfter(failed: { readonly digest: string; readonly reason: string }): void {
    this.say(
      HostCondition.upgrade,
      `host build ${failed.digest.slice(0, 12)}… did not take ${this.#voice.node} over: ${failed.reason}; the host before it (mesh ${MESH_VERSION}) resumed and adopted the node's processes again`,
    );
  }

  /** After a pass: a host running the build its composition names has no upgrade failure standing. */
  runsItsBuild(o: {
    readonly named: string | undefined;
    readonly running: string | undefined;
    readonly failing: boolean;
  }): void {
    if (o.named === undefined || o.running === undefined || o.named !== o.running || o.failing)
      return;
    this.resolve(
      HostCondition.upgrade,
      `${this.#voice.node}'s host runs host build ${o.running.slice(0, 12)}… (mesh ${MESH_VERSION}), the one its composition names`,
      true,
    );
  }

  /** Says what the bus has not heard yet (on a connection, and when the bus comes back: all). */
  async flush(again = false): Promise<void> {
    const bus = this.#voice.bus();
    if (bus === undefined) return;
    if (again) this.#heard.clear();
    for (const [which, saying] of this.#now) {
      if (this.#heard.has(which)) continue;
      try {
        await sayCondition(bus, {
          module: HOST_MODULE,
          node: this.#voice.node,
          name:
            which === HostCondition.upgrade
              ? hostUpgradeCondition(this.#voice.node)
              : hostVersionCondition(this.#voice.node),
          level: "error",
          message: saying.message,
          ...(saying.resolved ? { resolved: true } : {}),
        });
        if (this.#now.get(which) === saying) this.#heard.add(which);
      } catch (error) {
        this.#voice.log(`the condition ${which} was not said: ${(error as Error).message}`);
      }
    }
  }
}

/**
 * Where the output lines of the host's processes go: `mesh.logs.<node>.<module>` when the bus is
 * there; kept (log-outbox.ts) while it is not, and sent, oldest first, once it is.
 */
import { join } from "node:path";
import { publish } from "@mesh/bus";
import { logsSubject } from "@mesh/protocol";
import type { HostVoice } from "./host-options.js";
import { LogOutbox } from "./log-outbox.js";

export class HostOutput {
  readonly #voice: HostVoice;
  /** The host's root, whose log files keep what the bus did not get. */
  readonly #root: string;
  readonly #outbox = new LogOutbox();

  constructor({ root, ...voice }: HostVoice & { readonly root: string }) {
    this.#voice = voice;
    this.#root = root;
  }

  /** One line a process wrote. */
  line(module: string, processName: string, stream: "stdout" | "stderr", line: string): void {
    const said = { process: processName, stream, line, at: new Date().toISOString() };
    const bus = this.#voice.bus();
    if (bus === undefined) {
      this.#outbox.hold(module, said);
      return;
    }
    this.sendHeld();
    publish(bus, logsSubject(this.#voice.node, module), said);
  }

  /** Sends the lines read while there was no bus, oldest first (see log-outbox.ts). */
  sendHeld(): void {
    const bus = this.#voice.bus();
    if (bus === undefined || this.#outbox.size === 0) return;
    const dropped = this.#outbox.drain((module, said) =>
      publish(bus, logsSubject(this.#voice.node, module), said),
    );
    if (dropped > 0) {
      this.#voice.log(
        `the oldest ${dropped} output line(s) read while the bus was away were not sent to mesh logs: they are in the log files under ${join(this.#root, "logs")}`,
      );
    }
  }
}

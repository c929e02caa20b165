/**
 * A link between a client and a test server that a test cuts: a TCP proxy on a free port whose
 * connections it destroys and then refuses, until it mends it. Only the connections through it
 * are away — as one process of a node behind a partition while the others reach the bus.
 */
import { connect, createServer, type AddressInfo, type Socket } from "node:net";

export interface CuttableLink {
  /** The url a client connects to instead of the server's. */
  readonly url: string;
  /** Destroys every connection through the link and refuses new ones. */
  cut(): void;
  /** Lets connections through again. */
  mend(): void;
  /** Closes the link and every connection through it; closing twice is harmless. */
  close(): Promise<void>;
}

export async function startCuttableLink(serverPort: number): Promise<CuttableLink> {
  let refusing = false;
  const sockets = new Set<Socket>();
  const proxy = createServer((inbound) => {
    if (refusing) return void inbound.destroy();
    const outbound = connect(serverPort, "127.0.0.1");
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => (inbound.destroy(), outbound.destroy(), sockets.delete(s)));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const port = (proxy.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `nats://127.0.0.1:${port}`,
    cut() {
      refusing = true;
      for (const socket of sockets) socket.destroy();
    },
    mend() {
      refusing = false;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        proxy.close(() => resolve());
      });
      return closing;
    },
  };
}

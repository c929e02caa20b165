/**
 * The bus's certificate, fetched and held to a pinned SHA-256 fingerprint before anything is
 * trusted: what `mesh join` does with the fingerprint a join token carries. The token cannot
 * carry the certificate itself, and Node checks a pin only after the chain verifies against a
 * trusted authority (docs/nats.md §4), so the certificate is read once with no trust at all,
 * kept only if its fingerprint is the pinned one, and then given as the one authority of the
 * real, verified connection.
 *
 * nats-server 2.9 sends its INFO in the clear first and then expects the client's TLS handshake
 * on the same socket, so that is what is done here.
 */
import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls, type TLSSocket } from "node:tls";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { withDeadline } from "@mesh/kit";

export interface FetchPinnedOptions {
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** The host and port of a bus url (`nats://h:p`, `tls://h:p` or `h:p`; port 4222 by default). */
export function busAddress(url: string): { host: string; port: number } {
  const parsed = new URL(/^[a-z]+:\/\//.test(url) ? url : `nats://${url}`);
  return { host: parsed.hostname.replace(/^\[|\]$/g, ""), port: Number(parsed.port || "4222") };
}

/**
 * The PEM of the certificate the bus at `url` presents, when its SHA-256 fingerprint is
 * `fingerprint`; TLS_PIN_MISMATCH when it is another (or the bus does not speak TLS),
 * CONNECT_FAILED when the bus cannot be reached or does not answer within `timeoutMs` (5 s).
 */
export function fetchPinnedCertificate(
  url: string,
  fingerprint: string,
  options: FetchPinnedOptions = {},
): Promise<string> {
  const doing = `reading the certificate of the bus at ${url}`;
  const timeoutMs = options.timeoutMs ?? 5_000;
  return withDeadline(({ signal }) => readPinned(url, fingerprint, doing, signal), {
    ms: timeoutMs,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    expired: () =>
      new MeshError(
        ErrorCode.CONNECT_FAILED,
        `${doing}: no answer within ${timeoutMs} ms; check that the url is the one the mesh's operator gave`,
      ),
    aborted: () => new MeshError(ErrorCode.CONNECT_FAILED, `${doing}: aborted`),
  });
}

/** The certificate read and held to the pin; the socket is destroyed when `signal` aborts. */
async function readPinned(
  url: string,
  fingerprint: string,
  doing: string,
  signal: AbortSignal,
): Promise<string> {
  const { host, port } = busAddress(url);
  const socket = connectTcp({ host, port });
  const onAbort = (): void => void socket.destroy();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const info = await readInfo(socket).catch((error: unknown) => {
      throw new MeshError(
        ErrorCode.CONNECT_FAILED,
        `${doing}: ${(error as Error).message}; check that the url is the one the mesh's operator gave`,
        { cause: error },
      );
    });
    if (info["tls_required"] !== true && info["tls_available"] !== true) {
      throw new MeshError(
        ErrorCode.TLS_PIN_MISMATCH,
        `${doing}: it does not speak TLS, but the token pins the certificate ${fingerprint}; this is not the mesh's bus — check the url`,
      );
    }
    const tls = await handshake(socket, host).catch((error: unknown) => {
      throw new MeshError(ErrorCode.CONNECT_FAILED, `${doing}: ${(error as Error).message}`, {
        cause: error,
      });
    });
    const cert = tls.getPeerCertificate();
    tls.destroy();
    if (cert.fingerprint256 !== fingerprint) {
      throw new MeshError(
        ErrorCode.TLS_PIN_MISMATCH,
        `${doing}: it presented the certificate ${cert.fingerprint256 ?? "(none)"}, but the token pins ${fingerprint}; ` +
          "this is not the mesh's bus, or its certificate changed — ask the operator for a new token",
      );
    }
    return pem(cert.raw);
  } finally {
    signal.removeEventListener("abort", onAbort);
    socket.destroy();
  }
}

/** The server's first line, `INFO {…}`, read before anything is sent. */
function readInfo(socket: Socket): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let received = "";
    const onData = (chunk: Buffer): void => {
      received += chunk.toString("utf8");
      const end = received.indexOf("\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      socket.pause();
      const first = received.slice(0, end);
      if (!first.startsWith("INFO ")) {
        reject(
          new Error(`it did not answer as a NATS server (${JSON.stringify(first.slice(0, 80))})`),
        );
        return;
      }
      try {
        resolve(JSON.parse(first.slice(5)) as Record<string, unknown>);
      } catch (error) {
        reject(new Error(`its INFO is not JSON (${(error as Error).message})`));
      }
    };
    socket.on("data", onData);
    socket.once("error", reject);
    socket.once("close", () => reject(new Error("it closed the connection")));
  });
}

/** A TLS handshake on the socket that trusts nothing: only the certificate is wanted. */
function handshake(socket: Socket, host: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const tls = connectTls({
      socket,
      rejectUnauthorized: false,
      ...(/^[\d.:]+$/.test(host) ? {} : { servername: host }),
    });
    tls.once("secureConnect", () => resolve(tls));
    tls.once("error", reject);
  });
}

function pem(der: Buffer): string {
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;
}

/**
 * A self-signed certificate for the bus (`mesh up --listen`): an ECDSA P-256 key and an X.509 v3
 * certificate naming the addresses the bus is reached at, made with node:crypto alone. Node can
 * read and check certificates but not make them; the few DER structures a certificate needs are
 * written here (RFC 5280 §4.1) rather than taking a dependency for them (docs/dependencies.md).
 *
 * The certificate is its own authority: clients trust exactly it (its PEM as `ca`, its SHA-256
 * fingerprint pinned; docs/nats.md §4), and the servers of a cluster trust it for their routes.
 * It carries `basicConstraints CA:TRUE` as `openssl req -x509` writes it, and no key usages, so
 * it serves as server and client certificate alike.
 */
import {
  X509Certificate,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
} from "node:crypto";
import { isIP } from "node:net";

export interface SelfSignedOptions {
  /** The subject's common name. */
  readonly commonName: string;
  /** Host names and IP addresses it is valid for (the subjectAltName). */
  readonly hosts: readonly string[];
  /** How long it is valid, from now; 10 years by default. */
  readonly days?: number;
  readonly now?: Date;
}

export interface SelfSigned {
  readonly certPem: string;
  readonly keyPem: string;
  /** SHA-256 of the certificate, as `AA:BB:…` (Node's `fingerprint256`, openssl's form). */
  readonly fingerprint: string;
}

const OID = {
  commonName: "2.5.4.3",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
} as const;

/** Makes a key and a certificate signed with it. */
export function makeSelfSigned(options: SelfSignedOptions): SelfSigned {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const now = options.now ?? new Date();
  const notBefore = new Date(now.getTime() - 60_000);
  const notAfter = new Date(now.getTime() + (options.days ?? 3650) * 86_400_000);
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const algorithm = seq(oid(OID.ecdsaWithSha256));
  const name = seq(set(seq(oid(OID.commonName), utf8(options.commonName))));
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    algorithm,
    name,
    seq(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: "spki", format: "der" }),
    explicit(3, seq(subjectAltName(options.hosts), basicConstraintsCa())),
  );
  const signature = sign("sha256", tbs, { key: privateKey, dsaEncoding: "der" });
  const der = seq(tbs, algorithm, bitString(signature));
  const certPem = pem("CERTIFICATE", der);
  const keyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  return { certPem, keyPem, fingerprint: new X509Certificate(certPem).fingerprint256 };
}

/** The SHA-256 fingerprint of a PEM certificate, as a credential pins it. */
export function certificateFingerprint(certPem: string): string {
  return new X509Certificate(certPem).fingerprint256;
}

/** Whether `keyPem` is the private key of `certPem`. */
export function keyMatches(certPem: string, keyPem: string): boolean {
  return new X509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem));
}

function subjectAltName(hosts: readonly string[]): Buffer {
  const names = hosts.map((host) => {
    if (isIP(host) === 4) return tlv(0x87, Buffer.from(host.split(".").map(Number)));
    if (isIP(host) === 6) return tlv(0x87, ipv6Bytes(host));
    return tlv(0x82, Buffer.from(host, "ascii"));
  });
  return seq(oid(OID.subjectAltName), octetString(seq(...names)));
}

function basicConstraintsCa(): Buffer {
  return seq(
    oid(OID.basicConstraints),
    tlv(0x01, Buffer.from([0xff])),
    octetString(seq(tlv(0x01, Buffer.from([0xff])))),
  );
}

function ipv6Bytes(address: string): Buffer {
  const [head = "", tail = ""] = address.split("::");
  const part = (text: string) => (text === "" ? [] : text.split(":"));
  const left = part(head);
  const right = address.includes("::") ? part(tail) : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

// DER, the few forms a certificate needs (X.690).

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let length: Buffer;
  if (n < 0x80) length = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let rest = n; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
    length = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), length, content]);
}

const seq = (...parts: Buffer[]): Buffer => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]): Buffer => tlv(0x31, Buffer.concat(parts));
const explicit = (n: number, content: Buffer): Buffer => tlv(0xa0 + n, content);
const octetString = (content: Buffer): Buffer => tlv(0x04, content);
const bitString = (content: Buffer): Buffer =>
  tlv(0x03, Buffer.concat([Buffer.from([0]), content]));
const utf8 = (text: string): Buffer => tlv(0x0c, Buffer.from(text, "utf8"));

/** A non-negative INTEGER: no leading zero bytes, one added when the high bit is set. */
function integer(value: Buffer): Buffer {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0) start++;
  const bytes = value.subarray(start);
  return tlv(0x02, (bytes[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let v = arc >> 7; v > 0; v >>= 7) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5). */
function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`, "ascii"))
    : tlv(0x18, Buffer.from(`${iso}Z`, "ascii"));
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/**
 * NATS nkeys with Node's own Ed25519: the text forms (`SU…` seeds, `U…`/`A…`/`O…` public keys:
 * a prefix, the 32 key bytes and a CRC-16/XMODEM, in base32) and a key pair the JWT library
 * signs with. `@nats-io/nkeys` does the same in pure JavaScript (tweetnacl), at ~5 ms per key
 * derivation and signature; Node's crypto takes a few hundredths of that, which is what lets the
 * broker sign a thousand users in a pass (bench/ measures it). The keys and signatures are the
 * same bytes: a test checks them against `@nats-io/nkeys`.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  type KeyObject,
} from "node:crypto";
import { ErrorCode, MeshError } from "@mesh/protocol";

/** The role byte of each kind of key (nkeys' `Prefix`). */
export const KeyRole = { operator: 14 << 3, account: 0, user: 20 << 3 } as const;
export type KeyRole = (typeof KeyRole)[keyof typeof KeyRole];
const SEED = 18 << 3;

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/** PKCS#8 DER of an Ed25519 private key, before its 32 seed bytes. */
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

function base32(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

function unbase32(text: string): Uint8Array {
  const out: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const char of text) {
    const value = ALPHABET.indexOf(char);
    if (value < 0) throw invalidKey(text);
    buffer = ((buffer << 5) | value) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((buffer >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Uint8Array.from(out);
}

function withCrc(payload: Uint8Array): string {
  const crc = crc16(payload);
  const all = new Uint8Array(payload.length + 2);
  all.set(payload);
  all[payload.length] = crc & 0xff;
  all[payload.length + 1] = crc >> 8;
  return base32(all);
}

function invalidKey(text: string): MeshError {
  return new MeshError(
    ErrorCode.INVALID_VALUE,
    `${JSON.stringify(text.slice(0, 4))}… is not an nkey (base32 with a checksum)`,
  );
}

/** The text of a public key of `role`. */
export const encodePublic = (role: KeyRole, key: Uint8Array): string =>
  withCrc(Uint8Array.from([role, ...key]));

/** The text of a seed of `role`. */
export const encodeSeed = (role: KeyRole, seed: Uint8Array): string =>
  withCrc(Uint8Array.from([SEED | (role >> 5), (role & 31) << 3, ...seed]));

/** The role and the 32 raw bytes of a seed's text; INVALID_VALUE when its checksum is wrong. */
export function decodeSeed(text: string): { role: KeyRole; seed: Uint8Array } {
  const raw = unbase32(text);
  if (raw.length !== 36) throw invalidKey(text);
  const body = raw.subarray(0, 34);
  const crc = (raw[34] ?? 0) | ((raw[35] ?? 0) << 8);
  if (crc16(body) !== crc || ((body[0] ?? 0) & 0xf8) !== SEED) throw invalidKey(text);
  const role = (((body[0] ?? 0) & 7) << 5) | ((body[1] ?? 0) >> 3);
  return { role, seed: body.subarray(2) };
}

/** What the JWT library asks of a key pair. */
export interface SigningKeyPair {
  getPublicKey(): string;
  getPrivateKey(): Uint8Array;
  getSeed(): Uint8Array;
  sign(data: Uint8Array): Uint8Array;
  verify(data: Uint8Array, sig: Uint8Array): boolean;
  clear(): void;
  seal(): Uint8Array;
  open(): Uint8Array | null;
}

/** A key pair for a seed's text, signing with Node's Ed25519. */
export function nodeKeyPair(seedText: string): SigningKeyPair {
  const { role, seed } = decodeSeed(seedText);
  const privateKey: KeyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, seed]),
    format: "der",
    type: "pkcs8",
  });
  const raw = rawPublic(createPublicKey(privateKey));
  const publicText = encodePublic(role, raw);
  return {
    getPublicKey: () => publicText,
    getPrivateKey: () => Uint8Array.from(seed),
    getSeed: () => new TextEncoder().encode(seedText),
    sign: (data) => new Uint8Array(sign(null, data, privateKey)),
    verify: () => {
      throw new MeshError(ErrorCode.INTERNAL, "this key pair only signs");
    },
    clear: () => undefined,
    // Curve (xkey) sealing is for other kinds of keys.
    seal: () => {
      throw new MeshError(ErrorCode.INTERNAL, "this key pair only signs");
    },
    open: () => {
      throw new MeshError(ErrorCode.INTERNAL, "this key pair only signs");
    },
  };
}

/** A new key of `role`: its seed and public key, as text. */
export function newKey(role: KeyRole): { readonly seed: string; readonly publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const der = privateKey.export({ format: "der", type: "pkcs8" });
  const seed = der.subarray(der.length - 32);
  return { seed: encodeSeed(role, seed), publicKey: encodePublic(role, rawPublic(publicKey)) };
}

function rawPublic(key: KeyObject): Uint8Array {
  const der = key.export({ format: "der", type: "spki" });
  return new Uint8Array(der.subarray(der.length - 32));
}

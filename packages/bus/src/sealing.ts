/**
 * Sealing a secret to one node: X25519 (an ephemeral key agreed with the node's public key),
 * HKDF-SHA256 to a key, AES-256-GCM to encrypt. Only the holder of the node's private key can
 * open it. The context (e.g. the need's resource id) is bound into the key and as associated
 * data, so a sealed value cannot be replayed into another need or another node's composition.
 *
 * Format: `v1.<ephemeral public key>.<nonce>.<ciphertext>.<tag>`, each part base64url.
 */
import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
  type KeyObject,
} from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { ErrorCode, MeshError } from "@mesh/protocol";
import { createFileOnce } from "@mesh/kit";

const VERSION = "v1";
const INFO = "mesh seal v1";

/** A node's key pair; the public half is published in its presence. */
export interface NodeKeys {
  /** Base64 of the DER (SPKI) public key. */
  readonly publicKey: string;
  readonly privateKey: KeyObject;
}

export function generateNodeKeys(): NodeKeys {
  const { publicKey, privateKey } = generateKeyPairSync("x25519");
  return { publicKey: exportPublic(publicKey), privateKey };
}

function exportPublic(key: KeyObject): string {
  return key.export({ type: "spki", format: "der" }).toString("base64");
}

function importPublic(publicKey: string): KeyObject {
  try {
    const key = createPublicKey({
      key: Buffer.from(publicKey, "base64"),
      format: "der",
      type: "spki",
    });
    if (key.asymmetricKeyType !== "x25519")
      throw new Error(`a ${String(key.asymmetricKeyType)} key`);
    return key;
  } catch (error) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `the node's public key is not an X25519 public key (${(error as Error).message}); the node must publish a fresh presence`,
      { cause: error },
    );
  }
}

function deriveKey(shared: Buffer, ephemeral: Buffer, recipient: Buffer, context: string): Buffer {
  const salt = Buffer.concat([ephemeral, recipient]);
  return Buffer.from(hkdfSync("sha256", shared, salt, Buffer.from(`${INFO}\0${context}`), 32));
}

/** Why `publicKey` cannot be sealed to (its words), or undefined when it can. */
export function publicKeyProblem(publicKey: string): string | undefined {
  try {
    importPublic(publicKey);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Seals `plaintext` so that only the holder of `publicKey`'s private key opens it, for `context` only. */
export function seal(publicKey: string, plaintext: Uint8Array | string, context: string): string {
  const recipient = importPublic(publicKey);
  const ephemeral = generateKeyPairSync("x25519");
  const shared = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: recipient });
  const ephemeralDer = ephemeral.publicKey.export({ type: "spki", format: "der" });
  const recipientDer = recipient.export({ type: "spki", format: "der" });
  const key = deriveKey(shared, ephemeralDer, recipientDer, context);
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([
    cipher.update(typeof plaintext === "string" ? Buffer.from(plaintext) : plaintext),
    cipher.final(),
  ]);
  const parts = [ephemeralDer, nonce, body, cipher.getAuthTag()].map((b) =>
    b.toString("base64url"),
  );
  return [VERSION, ...parts].join(".");
}

/** Opens what `seal` made for this node and context; INVALID_VALUE when it was not, or was changed. */
export function unseal(privateKey: KeyObject, sealed: string, context: string): Buffer {
  const parts = sealed.split(".");
  if (parts.length !== 5 || parts[0] !== VERSION) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `a sealed value must be ${VERSION} with 4 parts; it was damaged — recompose the node`,
    );
  }
  const [ephemeralDer, nonce, body, tag] = parts
    .slice(1)
    .map((p) => Buffer.from(p, "base64url")) as [Buffer, Buffer, Buffer, Buffer];
  try {
    const ephemeral = createPublicKey({ key: ephemeralDer, format: "der", type: "spki" });
    const shared = diffieHellman({ privateKey, publicKey: ephemeral });
    const recipientDer = createPublicKey(privateKey).export({ type: "spki", format: "der" });
    const key = deriveKey(shared, ephemeralDer, recipientDer, context);
    const decipher = createDecipheriv("aes-256-gcm", key, nonce);
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]);
  } catch (error) {
    throw new MeshError(
      ErrorCode.INVALID_VALUE,
      `a sealed value for ${JSON.stringify(context)} does not open with this node's key: it was sealed to another node or key, for another need, or changed on the way; the controller reseals it when the node's presence shows its current key`,
      { cause: error },
    );
  }
}

/**
 * The node's private key at `path` (PEM, PKCS#8, mode 0600), made on first use. The public half is
 * derived from it, so the file is the one thing to keep.
 */
export async function loadOrCreateNodeKeys(path: string): Promise<NodeKeys> {
  try {
    const info = await stat(path);
    if ((info.mode & 0o077) !== 0) {
      throw new MeshError(
        ErrorCode.CREDENTIAL_EXPOSED,
        `the node key ${JSON.stringify(path)} has mode ${(info.mode & 0o777).toString(8)}, so others can read it; run \`chmod 600 ${path}\`, and since it may have been read, remove it and let the host make a new one`,
        { path },
      );
    }
    const privateKey = createPrivateKey(await readFile(path, "utf8"));
    return { privateKey, publicKey: exportPublic(createPublicKey(privateKey)) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const keys = generateNodeKeys();
  const pem = keys.privateKey.export({ type: "pkcs8", format: "pem" });
  // Made once, durably: a host restarted after a power cut must present the key it joined with.
  // Another process that made it first (a host and `mesh join` at once) wins: its key is read.
  if (await createFileOnce(path, pem, { mode: 0o600 })) return keys;
  return loadOrCreateNodeKeys(path);
}

/**
 * The vault: secrets at rest in `mesh-secrets`, sealed with one AES-256-GCM key that only the
 * controller holds, in a file beside its other state (mode 0600, made on first use). The bucket
 * key (`<module>.<name>`) is the associated data, so a sealed value moved to another key does not
 * open. See docs/decisions/0042-vault-key.md.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { createFileOnce } from "@mesh/kit";
import { ErrorCode, MeshError } from "@mesh/protocol";

export interface VaultSealed {
  readonly nonce: string;
  readonly ciphertext: string;
  readonly tag: string;
}

export class Vault {
  readonly #key: Buffer;

  private constructor(key: Buffer) {
    this.#key = key;
  }

  /** The vault whose key is at `path`; the key is made (32 random bytes, 0600) when there is none. */
  static async open(path: string): Promise<Vault> {
    try {
      const info = await stat(path);
      if ((info.mode & 0o077) !== 0) {
        throw new MeshError(
          ErrorCode.CREDENTIAL_EXPOSED,
          `the vault key ${path} has mode ${(info.mode & 0o777).toString(8)}, so others can read it; run \`chmod 600 ${path}\` — and since the secrets may have been read, set them again`,
          { path },
        );
      }
      const key = await readFile(path);
      if (key.length !== 32) {
        throw new MeshError(
          ErrorCode.INVALID_VALUE,
          `the vault key ${path} is ${key.length} bytes, not 32; it was damaged — restore it from a backup (without it, mesh-secrets cannot be opened)`,
          { path },
        );
      }
      return new Vault(key);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    const key = randomBytes(32);
    // Made once, durably (without the key, mesh-secrets cannot be opened, so it must survive a
    // power cut); two controllers starting at once must not each make a key: the second reads
    // the first's.
    if (await createFileOnce(path, key, { mode: 0o600 })) return new Vault(key);
    return Vault.open(path);
  }

  /** A vault with a given key, for tests. */
  static withKey(key: Buffer): Vault {
    return new Vault(Buffer.from(key));
  }

  seal(plaintext: string | Uint8Array, context: string): VaultSealed {
    const nonce = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, nonce);
    cipher.setAAD(Buffer.from(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return {
      nonce: nonce.toString("base64"),
      ciphertext: ciphertext.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
    };
  }

  /** INVALID_VALUE when it was sealed with another key, for another context, or changed. */
  open(sealed: VaultSealed, context: string): Buffer {
    try {
      const decipher = createDecipheriv(
        "aes-256-gcm",
        this.#key,
        Buffer.from(sealed.nonce, "base64"),
      );
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
      return Buffer.concat([
        decipher.update(Buffer.from(sealed.ciphertext, "base64")),
        decipher.final(),
      ]);
    } catch (error) {
      throw new MeshError(
        ErrorCode.INVALID_VALUE,
        `the vault cannot open the value sealed for ${JSON.stringify(context)}: it was sealed with another vault key or changed; set it again (mesh secret set)`,
        { key: context, cause: error },
      );
    }
  }
}

/** The credential file every process of the mesh speaks on the bus with (mode 0600, JSON). */
import { z } from "zod";
import { NAME_PATTERN } from "./names.js";

/** A SHA-256 certificate fingerprint as Node prints it: 32 uppercase hex pairs joined by `:`. */
export const FINGERPRINT_PATTERN = /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/;

export const Credential = z
  .object({
    /** One or more bus urls, e.g. `nats://127.0.0.1:4222`. */
    servers: z.array(z.string().min(1)).min(1),
    /** The bus user's name (in accounts mode: the name its user JWT carries). */
    user: z.string().min(1),
    /** Users-list mode: the password whose bcrypt hash the server's users list holds. */
    password: z.string().min(1).optional(),
    /** Accounts mode (decision 0080): the user JWT the mesh's account signing key signed. */
    jwt: z.string().min(1).optional(),
    /** Accounts mode: the user's nkey seed (`SU…`), which signs the server's nonce. */
    seed: z
      .string()
      .regex(/^SU[A-Z2-7]{56}$/, { error: "a user nkey seed is `SU` and 56 base32 letters" })
      .optional(),
    node: z.string().regex(NAME_PATTERN),
    module: z.string().regex(NAME_PATTERN),
    /** The bus's TLS certificate SHA-256 fingerprint; when set, only that certificate is trusted. */
    fingerprint: z
      .string()
      .regex(FINGERPRINT_PATTERN, {
        error:
          'a fingerprint is 32 uppercase hex pairs joined by ":" (what `openssl x509 -fingerprint -sha256` prints)',
      })
      .optional(),
    /** The bus's certificate (PEM), trusted as its own authority when the fingerprint is set. */
    ca: z.string().optional(),
    /**
     * Accounts mode, a host's own: the node's renewal login (a user JWT and seed that may only ask
     * `mesh.renew.<node>`), to get its current credential with once its own JWT expired while it
     * was away (decision 0150).
     */
    renewal: z
      .object({ jwt: z.string().min(1), seed: z.string().regex(/^SU[A-Z2-7]{56}$/) })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const signed = c.jwt !== undefined || c.seed !== undefined;
    if (c.password === undefined && !(c.jwt !== undefined && c.seed !== undefined)) {
      ctx.addIssue({
        code: "custom",
        path: signed ? [c.jwt === undefined ? "jwt" : "seed"] : ["password"],
        message: signed
          ? "a signed credential carries both its user JWT and its nkey seed"
          : "a credential carries a password (users-list mode) or a user JWT and nkey seed (accounts mode)",
      });
    }
    if (c.password !== undefined && signed) {
      ctx.addIssue({
        code: "custom",
        path: ["password"],
        message: "a credential is either a password or a signed user JWT, not both",
      });
    }
  });
export type Credential = z.infer<typeof Credential>;

/** What a schema refused in a file, as one line: `path: message; …` (`(root)` for the whole). */
export function issuesText(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
}

/** The credential file every process of the mesh speaks on the bus with (mode 0600, JSON). */
import { z } from "zod";
import { NAME_PATTERN } from "./names.js";

/** A SHA-256 certificate fingerprint as Node prints it: 32 uppercase hex pairs joined by `:`. */
export const FINGERPRINT_PATTERN = /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/;

export const Credential = z
  .object({
    /** One or more bus urls, e.g. `nats://127.0.0.1:4222`. */
    servers: z.array(z.string().min(1)).min(1),
    user: z.string().min(1),
    password: z.string().min(1),
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
  })
  .strict();
export type Credential = z.infer<typeof Credential>;

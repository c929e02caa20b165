/**
 * Where a manifest enters the controller: a value read from `mesh-manifests` (or text, for
 * `mesh manifest check`). Whatever arrives, the answer is a usable manifest or its problems —
 * never an exception: one broken manifest must not stop the controller composing every other node.
 */
import { checkManifest, parseManifestText, type ManifestFormat } from "@mesh/core";
import type { IntakeResult } from "./fleet.js";

/** A manifest value as parsed from JSON off the bus. */
export function intakeManifest(value: unknown): IntakeResult {
  try {
    const check = checkManifest(value);
    return check.ok
      ? { ok: true, manifest: check.manifest }
      : { ok: false, problems: check.problems };
  } catch (error) {
    // checkManifest promises not to throw; should it, the manifest is refused, not the controller.
    return { ok: false, problems: [`the manifest could not be checked: ${String(error)}`] };
  }
}

/** A manifest's bytes as stored on the bus (JSON), or text with its format. */
export function intakeManifestText(text: string, format: ManifestFormat = "json"): IntakeResult {
  try {
    const check = parseManifestText(text, format);
    return check.ok
      ? { ok: true, manifest: check.manifest }
      : { ok: false, problems: check.problems };
  } catch (error) {
    return { ok: false, problems: [`the manifest could not be read: ${String(error)}`] };
  }
}

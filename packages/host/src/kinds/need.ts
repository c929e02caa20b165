/**
 * The need kind: a file a module declares (its bus credential, a secret), sealed to this node's key
 * in the composition and written 0600 inside the module's secrets folder (`../needs.ts`).
 *
 * - check: a need the controller has nothing to seal for yet (a secret not set, a credential not
 *   issued yet) is waited for, not failed: its module keeps what runs and starts by itself once it
 *   arrives. Checked before anything of the module stops.
 * - remove: the files nothing wants any more, or that move elsewhere.
 * - apply: each new or changed file written (after the stops); a path the host did not write
 *   before is never written over.
 */
import { fingerprintOf } from "@mesh/core";
import { ErrorCode, MeshError, type NeedResource, type Resource } from "@mesh/protocol";
import { checkNeedPath, refuseForeignFile, removeNeed, writeNeed } from "../needs.js";
import { changes, type Kind, type Pass, type Waiting } from "./kind.js";

export interface NeedDesired {
  /** By resource id. */
  readonly needs: ReadonlyMap<string, NeedResource>;
}

export interface NeedPlan {
  readonly writeNeeds: readonly NeedResource[];
  /** Need ids whose file is to be removed. */
  readonly removeNeeds: readonly string[];
}

type NeedPass = Pass<NeedDesired, NeedPlan>;

export const needKind = {
  name: "need",

  desired(resources: readonly Resource[]): NeedDesired {
    const needs = new Map<string, NeedResource>();
    for (const r of resources) if (r.type === "need") needs.set(r.id, r);
    return { needs };
  },

  plan(desired, applied): NeedPlan {
    const { drop, put } = changes(
      applied.needs,
      desired.needs,
      (had, want) => had.path !== want.path,
      (had, want) => had?.fingerprint !== fingerprintOf(want),
    );
    return { writeNeeds: put.map(([, want]) => want), removeNeeds: drop };
  },

  check: (pass: NeedPass): void => {
    for (const want of pass.plan.writeNeeds) {
      if (want.sealed !== undefined || pass.waiting.has(want.module)) continue;
      const wait = waitingFor(want);
      pass.waiting.set(want.module, wait);
      pass.fail(want.module, new MeshError(ErrorCode.NOT_FOUND, `${wait.what}: ${wait.fix}`));
    }
  },

  remove: async (pass: NeedPass, { root, store }): Promise<void> => {
    for (const id of pass.plan.removeNeeds) {
      const record = store.needs[id];
      if (record === undefined) continue;
      await removeNeed(root, record);
      store.forget("needs", id);
    }
  },

  apply: async (pass: NeedPass, { root, store, keys }): Promise<void> => {
    for (const want of pass.plan.writeNeeds) {
      if (pass.failed.has(want.module)) continue;
      try {
        const known = Object.values(store.needs).some((n) => n.path === want.path);
        if (!known) {
          checkNeedPath(root, want);
          await refuseForeignFile(want);
          // Ours from here on, before the write: a crash in between must not make it foreign.
          store.record("needs", want.id, { module: want.module, path: want.path, fingerprint: "" });
          await store.saved();
        }
        await writeNeed({ root, need: want, privateKey: keys.privateKey, known: true });
        store.record("needs", want.id, {
          module: want.module,
          path: want.path,
          fingerprint: fingerprintOf(want),
        });
      } catch (error) {
        pass.fail(want.module, error);
      }
    }
  },
} satisfies Kind<NeedDesired, NeedPlan>;

/** What a module waits for when its need has no sealed content yet, and what ends the wait. */
function waitingFor(want: NeedResource): Waiting {
  return want.kind === "secret"
    ? {
        code: ErrorCode.NOT_FOUND,
        what: `waiting for secret \`${want.name}\` of ${want.module}`,
        fix: `set it with \`mesh secret set ${want.module} ${want.name}\` (the value on stdin); the module starts by itself once it is set`,
      }
    : {
        code: ErrorCode.NOT_FOUND,
        what: `waiting for ${want.module}'s bus credential (${want.id}) from the controller`,
        fix: "nothing to do: the controller issues it on its next pass and the module starts by itself; if it stays, read the controller's log",
      };
}

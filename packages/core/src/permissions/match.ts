/**
 * How nats-server decides whether a credential may publish or subscribe to a subject, so tests
 * (and a cautious caller) can ask a grant the same question the server will.
 */
import type { Permissions } from "@mesh/protocol";

/** What a credential does with a subject. */
export type SubjectAction = "publish" | "subscribe";

/**
 * Whether `subject` falls under the permission `pattern`, the way the server's sublist matches
 * it: the subject's tokens are taken literally, so a literal `>` or `*` in the subject is matched
 * by a `*` in the pattern. That is how a client widens `…cfg.*.*` to `…cfg.*.>` (verified on
 * 2.9.10, see docs/decisions/0020-permissions.md), and why grants never put `*` where a client
 * chooses the rest of the subject.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  const want = pattern.split(".");
  const have = subject.split(".");
  for (let i = 0; i < want.length; i++) {
    const token = want[i];
    // `>` takes one or more remaining tokens, whatever they are.
    if (token === ">") return have.length > i;
    if (i >= have.length) return false;
    if (token !== "*" && token !== have[i]) return false;
  }
  return want.length === have.length;
}

/**
 * Whether `permissions` let a credential do `action` on `subject`. Mirrors the server: a missing
 * or *empty* allow list allows everything (the fact the grants guard against), and a deny match
 * wins over an allow.
 */
export function isAllowed(
  permissions: Permissions,
  action: SubjectAction,
  subject: string,
): boolean {
  const { allow, deny } = permissions[action];
  const allowed =
    allow === undefined || allow.length === 0 || allow.some((p) => subjectMatches(p, subject));
  return allowed && !(deny ?? []).some((p) => subjectMatches(p, subject));
}

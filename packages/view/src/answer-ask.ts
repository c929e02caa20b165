/**
 * Answering an ask: the one call `mesh answer` and the view's page both make. It lives here, not
 * in the CLI's verbs, because the view answers asks whether or not the CLI started it; the CLI's
 * verb imports it, so the terminal and the page cannot drift apart.
 */
import { Answer, Bucket, ErrorCode, MeshError, askKey, nameProblem } from "@mesh/protocol";
import { KvBucket, type MeshBus } from "@mesh/bus";

export interface AnswerInput {
  /** The ask's id (`mesh asks`). */
  readonly id: string;
  readonly answer: "yes" | "no";
  /** Who answers, as written in `mesh-answers.<id>`. */
  readonly by: string;
}

export interface Answered {
  /** The line the CLI prints. */
  readonly message: string;
  /** What was written in `mesh-answers.<id>`. */
  readonly value: Answer;
}

/**
 * Writes the answer to an ask that stands in `mesh-asks`; NOT_FOUND when none does (it was never
 * asked, or the assigner withdrew it), INVALID_INPUT for an id that is no ask's name or an
 * answer that is neither yes nor no.
 */
export async function answerAsk(
  bus: MeshBus,
  input: AnswerInput,
  options: { readonly signal?: AbortSignal } = {},
): Promise<Answered> {
  const problem = nameProblem("ask", input.id);
  if (problem !== undefined) throw new MeshError(ErrorCode.INVALID_INPUT, problem);
  if (input.answer !== "yes" && input.answer !== "no") {
    throw new MeshError(
      ErrorCode.INVALID_INPUT,
      `the answer ${JSON.stringify(input.answer)} is not yes or no; answer yes or no`,
    );
  }
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  const ask = await (await KvBucket.open(bus, Bucket.asks)).get(askKey(input.id), signal);
  if (ask === undefined) {
    throw new MeshError(
      ErrorCode.NOT_FOUND,
      `no ask ${JSON.stringify(input.id)} waits for an answer (it may have been withdrawn); see \`mesh asks\``,
      { key: input.id },
    );
  }
  const value = Answer.parse({ answer: input.answer, by: input.by, at: new Date().toISOString() });
  await (await KvBucket.open(bus, Bucket.answers)).put(askKey(input.id), value, signal);
  return { message: `answered ${input.answer} to ${input.id}: ${ask.value.what}`, value };
}

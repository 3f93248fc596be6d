// What both answers report of a request besides its text: OpenAI's usage and finish reason, and the tokenrouter attribution (which model wrote how much).
import type { RequestAttribution } from '../../../shared/api/openaiAnswer.ts';
import type { GenerateOutcome, Plan } from './requestPlan.ts';

/**
 * OpenAI's usage: each distinct prompt counted once however many choices it has (in order); its
 * cached tokens are the most any of its choices found in the prefix cache.
 */
export function usageOf(plan: Plan, outs: readonly GenerateOutcome[]) {
  const perPrompt = plan.jobs.length / plan.promptCount;
  const completion = outs.reduce((a, o) => a + o.result.tokens.length, 0);
  let cached = 0;
  for (let i = 0; i < outs.length; i += perPrompt) cached += Math.max(...outs.slice(i, i + perPrompt).map((o) => o.result.cachedPromptTokens));
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: completion,
    total_tokens: plan.promptTokens + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
}

/** The finish reason OpenAI gives: "tool_calls" when the answer ended by itself with calls in it. */
export const finishReasonOf = (reason: string, calls: number) => (calls > 0 && reason === 'stop' ? 'tool_calls' : reason);

/** The `tokenrouter` field: one choice's, or several summed (each choice carries its own too). */
export function attribution(...outs: GenerateOutcome[]): RequestAttribution {
  const byModel: Record<string, number> = {};
  for (const o of outs) for (const [m, c] of Object.entries(o.result.tokensByModel)) byModel[m] = (byModel[m] ?? 0) + c;
  return {
    algorithm: outs[0].algorithm,
    version: outs[0].version,
    tokens_by_model: byModel,
    handoffs: outs.reduce((a, o) => a + o.result.handoffs, 0),
    discarded_tokens: outs.reduce((a, o) => a + o.result.discarded, 0),
  };
}

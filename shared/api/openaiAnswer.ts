// OpenAI-compatible answers as clients read them: logprobs, the TokenRouter attribution, error bodies, streamed chunks.
import { z } from 'zod';

/** One output token's log probability and the most likely alternatives, as OpenAI's chat API gives them. */
export interface ChatTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
  /** Whose distribution this is: the model that wrote the token (routing mixes models within one answer). */
  tokenrouter_model: string;
}

/** Legacy completions logprobs: parallel arrays, one entry per output token. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
  /** Per token: the model whose distribution gave these numbers. */
  tokenrouter_models: string[];
}

/** Per committed token: who produced it, what route() saw, and what it decided (`tokenrouter.tokens[]`, opt-in). */
export const tokenAttributionSchema = z.object({
  id: z.number().int(),
  text: z.string(),
  model: z.string(),
  signals: z.object({ entropy: z.number(), maxProb: z.number(), margin: z.number(), heads: z.record(z.string(), z.number()) }),
  decision: z.enum(['stay', 'handoff']),
  kept: z.boolean(),
});
export type TokenAttribution = z.infer<typeof tokenAttributionSchema>;

/** Per request: committed tokens by model and how often the request switched (`tokenrouter` on every response). */
export const requestAttributionSchema = z.object({
  algorithm: z.string(),
  version: z.number().int().nullable(),
  tokens_by_model: z.record(z.string(), z.number()),
  handoffs: z.number().int(),
  discarded_tokens: z.number().int(),
});
export type RequestAttribution = z.infer<typeof requestAttributionSchema>;

/** Every error answer, HTTP or a stream's last event; `details` carries structured issues (e.g. one per IR node). */
export const openAIErrorBodySchema = z.object({
  error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string().nullable(), details: z.unknown().optional() }),
});
export type OpenAIErrorBody = z.infer<typeof openAIErrorBodySchema>;

/** One streamed chat chunk as a client reads it: content deltas, the finish reason, and the tokens' attribution. */
export const chatChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullable().optional(),
            /** With a reasoning parser: the thought, apart from the answer. */
            reasoning_content: z.string().optional(),
            /** A call's id, type and name first (arguments ""), then its arguments, as OpenAI streams them. */
            tool_calls: z
              .array(
                z.object({
                  index: z.number().int(),
                  id: z.string().optional(),
                  type: z.literal('function').optional(),
                  function: z.object({ name: z.string().optional(), arguments: z.string().optional() }),
                }),
              )
              .optional(),
          })
          .optional(),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .optional(),
  /** Content chunks: `models`, this chunk's tokens by the model that wrote them; `tokens` with tokenrouter_tokens. */
  tokenrouter: z.object({ models: z.record(z.string(), z.number()).optional(), tokens: z.array(tokenAttributionSchema).optional() }).optional(),
  error: openAIErrorBodySchema.shape.error.optional(),
});

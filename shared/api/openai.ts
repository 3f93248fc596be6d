// OpenAI-compatible request bodies (validated at the edge) and the TokenRouter extension fields.
import { z } from 'zod';

const stop = z.union([z.string(), z.array(z.string()).max(4)]).nullish();

const common = {
  model: z.string().min(1).max(200),
  max_tokens: z.number().int().min(1).max(1_000_000).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  seed: z.number().int().min(-(2 ** 53)).max(2 ** 53).nullish(),
  stop,
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
  n: z.literal(1).nullish(),
  user: z.string().max(256).nullish(),
  /** vLLM extensions: no EOS and no stop string before this many tokens; `ignore_eos` = min_tokens of max_tokens. */
  min_tokens: z.number().int().min(0).max(1_000_000).nullish(),
  ignore_eos: z.boolean().nullish(),
  /** With model "draft": an algorithm IR to run without deploying it (the designer's playground). */
  tokenrouter_ir: z.unknown().optional(),
};

export const completionRequestSchema = z.object({
  ...common,
  prompt: z.union([z.string(), z.array(z.string()).length(1), z.array(z.number().int().min(0)).min(1)]),
});

export const chatRequestSchema = z.object({
  ...common,
  max_completion_tokens: z.number().int().min(1).max(1_000_000).nullish(),
  messages: z
    .array(
      z.object({
        role: z.enum(['system', 'user', 'assistant', 'developer']),
        content: z.union([z.string(), z.array(z.object({ type: z.literal('text'), text: z.string() })).min(1)]),
        name: z.string().optional(),
      }),
    )
    .min(1),
});

export type CompletionRequest = z.infer<typeof completionRequestSchema>;
export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** Per committed token: who produced it, what route() saw, and what it decided. */
export interface TokenAttribution {
  id: number;
  text: string;
  model: string;
  signals: { entropy: number; maxProb: number; margin: number; heads: Readonly<Record<string, number>> };
  decision: 'stay' | 'handoff';
  kept: boolean;
}

/** Per request: committed tokens by model and how often the request switched. */
export interface RequestAttribution {
  algorithm: string;
  version: number | null;
  tokens_by_model: Record<string, number>;
  handoffs: number;
  discarded_tokens: number;
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null; details?: unknown };
}

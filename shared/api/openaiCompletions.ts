// The legacy /v1/completions request body: a prompt (text or token ids, one or several) instead of chat messages; the shared fields are in openai.ts.
import { z } from 'zod';
import { common, MAX_CHOICES, streamOptionsNeedStream } from './openai.ts';
import { onlyIf } from './openaiRefused.ts';

const tokenIds = z.array(z.number().int().min(0)).min(1);

export const completionRequestSchema = z
  .object({
    ...common,
    /** A text, several texts, a token-id list or several token-id lists: one choice (times n) each. */
    prompt: z.union([z.string(), z.array(z.string()).min(1).max(MAX_CHOICES), tokenIds, z.array(tokenIds).min(1).max(MAX_CHOICES)]),
    /** Top logprobs per token, as the legacy completions API (0..5). */
    logprobs: z.number().int().min(0).max(5).nullish(),
    /** The prompt's text is prepended to each choice's text. */
    echo: z.boolean().nullish(),
    best_of: onlyIf((v) => v === 1, 'only 1 is supported: ask for n choices and rank them yourself'),
    suffix: onlyIf((v) => v === '', 'only "" is supported: the served models do no fill-in-the-middle'),
  })
  .strict()
  .superRefine(streamOptionsNeedStream);

export type CompletionRequest = z.infer<typeof completionRequestSchema>;

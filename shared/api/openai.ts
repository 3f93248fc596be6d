// The OpenAI chat request body (validated at the edge), the fields completions share (openaiCompletions.ts) and the TokenRouter extensions; answers: openaiAnswer.ts.
import { z } from 'zod';
import { guidedFields, responseFormatSchema, structuredOutputsSchema, toolCallSchema, toolChoiceSchema, toolSchema } from './openaiConstraints.ts';
import { DEPRECATED_FUNCTIONS, onlyIf, refused } from './openaiRefused.ts';

/** Stop strings a request may give, as OpenAI allows. */
export const MAX_STOP = 4;

// The count is checked outside the union: inside it, a failed max(4) only made the union say "Invalid input".
const stop = z
  .union([z.string(), z.array(z.string())], { error: 'must be a string or a list of strings' })
  .nullish()
  .superRefine((v, ctx) => {
    if (Array.isArray(v) && v.length > MAX_STOP) ctx.addIssue({ code: 'custom', message: `at most ${MAX_STOP} strings, got ${v.length}` });
  });

/** Most choices one request may ask for (n times the prompts), as OpenAI caps n. */
export const MAX_CHOICES = 128;

const maxTokens = z.number().int().min(1).max(1_000_000).nullish();

/** ±2^53: every integer a JSON number holds exactly. */
const SEED_BOUND = 2 ** 53;

export const common = {
  model: z.string().min(1).max(200),
  max_tokens: maxTokens,
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  /** vLLM extensions: the draw keeps the k most likely tokens (-1 or 0: no cut), and those at least min_p times the most likely one's probability. */
  top_k: z
    .number()
    .int()
    .min(-1, 'must be -1 or 0 (no cut) or a positive integer')
    .max(2 ** 31 - 1)
    .nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  /** vLLM extension: token ids that end the answer as an EOS does (finish_reason "stop", the token not shown). */
  stop_token_ids: z.array(z.number().int().min(0)).max(1024).nullish(),
  seed: z.number().int().min(-SEED_BOUND).max(SEED_BOUND).nullish(),
  stop,
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).strict().nullish(),
  /** vLLM's --stream-interval per request: committed tokens per streamed chunk (the first chunk goes at once); default the server's limits.streamInterval. */
  stream_interval: z.number().int().min(1).max(1024).nullish(),
  /** Independent choices, each drawn with its own seed derived from the request's. */
  n: z.number().int().min(1).max(MAX_CHOICES).nullish(),
  user: z.string().max(256).nullish(),
  /** Applied to the draw over the output tokens so far (OpenAI's definition); signals stay the model's own. */
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  /** Token id (as a string, OpenAI's wire form) -> bias added to its logit before the draw. */
  logit_bias: z
    .record(z.string().regex(/^(0|[1-9][0-9]{0,9})$/, 'logit_bias keys are token ids'), z.number().min(-100).max(100))
    .refine((m) => Object.keys(m).length <= 1024, { message: 'logit_bias holds at most 1024 tokens' })
    .nullish(),
  /** vLLM extensions: no EOS and no stop string before this many tokens; `ignore_eos` = min_tokens of max_tokens. */
  min_tokens: z.number().int().min(0).max(1_000_000).nullish(),
  ignore_eos: z.boolean().nullish(),
  /** With model "draft": an algorithm IR to run without deploying it (the designer's playground). */
  tokenrouter_ir: z.unknown().optional(),
  /** The answer matches a JSON Schema, any JSON object, or plain text (OpenAI); enforced by a grammar every model writes under. */
  response_format: responseFormatSchema.nullish(),
  /** vLLM's structured outputs: json (a schema), regex, choice, grammar (EBNF) or json_object; one at most. */
  structured_outputs: structuredOutputsSchema.nullish(),
  ...guidedFields,
  /** Add `tokenrouter.tokens`, one entry per token with its model and signals, to the answer or to each streamed chunk (the playground's view; off by default: kilobytes no OpenAI client asked for). */
  tokenrouter_tokens: z.boolean().nullish(),
};

/** OpenAI refuses stream_options on a request that does not stream; so does this server. */
export function streamOptionsNeedStream(b: { stream?: boolean | null; stream_options?: unknown; stream_interval?: unknown }, ctx: z.RefinementCtx): void {
  for (const k of ['stream_options', 'stream_interval'] as const)
    if (b[k] != null && b.stream !== true) ctx.addIssue({ code: 'custom', path: [k], message: 'only allowed with stream: true' });
}

const textContent = z.union([z.string(), z.array(z.object({ type: z.literal('text'), text: z.string() }).strict()).min(1)]);

const chatMessage = z
  .object({
    // function passes here only to be refused below with the reason; the error lists the roles that work
    role: z.enum(['system', 'user', 'assistant', 'developer', 'tool', 'function'], { error: 'must be one of system, developer, user, assistant, tool' }),
    /** Null or absent only on an assistant message (OpenAI allows it there). */
    content: textContent.nullish(),
    name: z.string().optional(),
    refusal: z.null().optional(),
    /** An assistant message's calls, sent back with the conversation; rendered by the model's chat template. */
    tool_calls: z.array(toolCallSchema).nullish(),
    /** A tool message: the call it answers. */
    tool_call_id: z.string().min(1).max(256).optional(),
    /** An assistant message's thought (vLLM), for templates that render it. */
    reasoning_content: z.string().nullish(),
    function_call: refused(DEPRECATED_FUNCTIONS),
    /** Added by the openai client's parse and stream helpers to the messages they return, so a message sent back as it came carries them; ignored. */
    parsed: z.unknown().optional(),
    annotations: z.array(z.unknown()).optional(),
  })
  .strict()
  .superRefine((m, ctx) => {
    if (m.role === 'function')
      ctx.addIssue({ code: 'custom', path: ['role'], message: `"function" messages are ${DEPRECATED_FUNCTIONS} (role "tool" with tool_call_id)` });
    else if (m.role === 'tool' && m.tool_call_id === undefined)
      ctx.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'a tool message needs the tool_call_id of the call it answers' });
    else if (m.content == null && m.role !== 'assistant') ctx.addIssue({ code: 'custom', path: ['content'], message: `a ${m.role} message needs content` });
    if (m.tool_calls != null && m.role !== 'assistant')
      ctx.addIssue({ code: 'custom', path: ['tool_calls'], message: 'only an assistant message carries tool_calls' });
    if (m.tool_call_id !== undefined && m.role !== 'tool')
      ctx.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'only a tool message carries tool_call_id' });
  });

export const chatRequestSchema = z
  .object({
    ...common,
    max_completion_tokens: maxTokens,
    messages: z.array(chatMessage).min(1),
    /** Logprobs of each output token, and the top_logprobs (0..20) most likely tokens at each position. */
    logprobs: z.boolean().nullish(),
    top_logprobs: z.number().int().min(0).max(20).nullish(),
    /** Functions the model may call; the model's toolCallParser reads its calls back. */
    tools: z.array(toolSchema).max(128).nullish(),
    /** Default "auto" with tools, "none" without; "required" and a named function are enforced by a grammar. */
    tool_choice: toolChoiceSchema.nullish(),
    /** false: at most one call (enforced under "required" and a named function). */
    parallel_tool_calls: z.boolean().nullish(),
    functions: refused(DEPRECATED_FUNCTIONS),
    function_call: onlyIf((v) => v === 'none', `${DEPRECATED_FUNCTIONS} (only "none" is accepted)`),
    /** vLLM: further variables for the chat template, e.g. {"enable_thinking": false} for Qwen3. */
    chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
  })
  .strict()
  .superRefine((b, ctx) => {
    streamOptionsNeedStream(b, ctx);
    if (b.top_logprobs != null && b.logprobs !== true) ctx.addIssue({ code: 'custom', path: ['top_logprobs'], message: 'needs logprobs: true' });
  });

export type ChatRequest = z.infer<typeof chatRequestSchema>;
export type ChatMessage = ChatRequest['messages'][number];

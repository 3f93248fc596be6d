// What a chat chunk carries beyond content and tokens, in OpenAI's shapes: reasoning_content, tool_calls deltas (accumulated into whole calls) and usage with cached prompt tokens.
import { z } from 'zod';

const toolCallDeltaSchema = z.object({
  /** Which call this piece belongs to; OpenAI always sends it when streaming. */
  index: z.number().int().min(0).optional(),
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});
export type ToolCallDelta = z.infer<typeof toolCallDeltaSchema>;

export const chatUsageSchema = z.object({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
  total_tokens: z.number().int().min(0).optional(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int().min(0).nullish() }).nullish(),
});
export type ChatUsage = z.infer<typeof chatUsageSchema>;

/** The parts of a streamed chunk (or a whole message's delta-like fields) the playground shows apart from the content. */
export const chunkExtrasSchema = z.object({
  choices: z
    .array(z.object({ delta: z.object({ reasoning_content: z.string().nullish(), tool_calls: z.array(toolCallDeltaSchema).nullish() }).nullish() }))
    .nullish(),
  usage: chatUsageSchema.nullish(),
});

/** One call as the page shows it: the arguments stay the model's text (it may be cut short or not JSON). */
export interface ToolCall {
  index: number;
  id: string;
  name: string;
  arguments: string;
}

/** Folds streamed pieces into whole calls: a call's first piece names it, every piece appends to its arguments. */
export function mergeToolCalls(calls: readonly ToolCall[], deltas: readonly ToolCallDelta[]): ToolCall[] {
  const out = calls.map((c) => ({ ...c }));
  deltas.forEach((d, k) => {
    const index = d.index ?? k;
    let call = out.find((c) => c.index === index);
    if (!call) {
      call = { index, id: '', name: '', arguments: '' };
      out.push(call);
    }
    if (d.id) call.id = d.id;
    // OpenAI names a call whole in its first piece; a server that repeats it must not double it
    if (d.function?.name) call.name = d.function.name;
    if (d.function?.arguments) call.arguments += d.function.arguments;
  });
  return out.sort((a, b) => a.index - b.index);
}

/** `text` indented when it parses as JSON, else null. */
export function prettyJson(text: string): string | null {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return null;
  }
}

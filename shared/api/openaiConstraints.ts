// Request fields that constrain or structure an answer: response_format, vLLM's structured outputs, tools and tool_choice.
import { z } from 'zod';

/** A JSON Schema as a request gives it: an object (its validity is checked when the request is planned). */
const jsonSchema = z.record(z.string(), z.unknown(), { error: 'must be a JSON Schema object' });

/** OpenAI's names for functions and schemas: letters, digits, _ and -, at most 64. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const name = z.string().regex(NAME, 'must be 1 to 64 letters, digits, underscores or dashes');

export const responseFormatSchema = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }).strict(),
    z.object({ type: z.literal('json_object') }).strict(),
    z
      .object({
        type: z.literal('json_schema'),
        json_schema: z
          .object({
            name,
            description: z.string().optional(),
            schema: jsonSchema,
            /** The schema is enforced either way (as vLLM does): strict only says the client wants it. */
            strict: z.boolean().nullish(),
          })
          .strict(),
      })
      .strict(),
  ],
  { error: 'must be "text", "json_object" or "json_schema"' },
);

/** vLLM's `structured_outputs`: one of its constraint fields. */
export const structuredOutputsSchema = z
  .object({
    json: z.union([z.string(), jsonSchema], { error: 'must be a JSON Schema (object or its JSON text)' }).optional(),
    regex: z.string().optional(),
    choice: z.array(z.string()).min(1).optional(),
    grammar: z.string().optional(),
    json_object: z.boolean().optional(),
  })
  .strict();

/** vLLM's older per-field spelling of the same constraints. */
export const guidedFields = {
  guided_json: z.union([z.string(), jsonSchema], { error: 'must be a JSON Schema (object or its JSON text)' }).nullish(),
  guided_regex: z.string().nullish(),
  guided_choice: z.array(z.string()).min(1).nullish(),
  guided_grammar: z.string().nullish(),
};

export const toolSchema = z
  .object({
    type: z.string(),
    function: z
      .object({
        name,
        description: z.string().optional(),
        /** Absent: a function without arguments. */
        parameters: jsonSchema.optional(),
        strict: z.boolean().nullish(),
      })
      .strict(),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (t.type !== 'function') ctx.addIssue({ code: 'custom', path: ['type'], message: `unknown tool type "${t.type}": only "function" is supported` });
  });

export const toolChoiceSchema = z.union(
  [z.enum(['none', 'auto', 'required']), z.object({ type: z.literal('function'), function: z.object({ name: z.string() }).strict() }).strict()],
  { error: 'must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}' },
);

/** One call an assistant message made (sent back with the conversation). */
export const toolCallSchema = z
  .object({
    id: z.string().min(1).max(256),
    type: z.literal('function'),
    function: z.object({ name: z.string(), arguments: z.string() }).strict(),
  })
  .strict();

export type ResponseFormat = z.infer<typeof responseFormatSchema>;
export type StructuredOutputs = z.infer<typeof structuredOutputsSchema>;
export type Tool = z.infer<typeof toolSchema>;
export type ToolChoice = z.infer<typeof toolChoiceSchema>;
export type ToolCall = z.infer<typeof toolCallSchema>;

// An evaluation task as data: its header (name, grader) and one problem per JSONL line; checked at load by the runtime (runtime/eval/loadTask.ts).
import { z } from 'zod';

/** The splits a task folder may hold, each a JSONL file beside task.json: validation for choices, held-out for reports. */
export const TASK_SPLITS = ['validation', 'heldout'] as const;
export type TaskSplitName = (typeof TASK_SPLITS)[number];

/** Letters the `choice` grader reads: the first of them standing alone in the answer. */
export const CHOICE_LETTERS = ['A', 'B', 'C', 'D', 'E'] as const;

/** Whether `pattern` with `flags` compiles as a JavaScript regular expression: the error's text when it does not. */
export function regexError(pattern: string, flags: string | undefined): string | null {
  try {
    new RegExp(pattern, flags);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

export const graderSchema = z.discriminatedUnion('kind', [
  /** The last number of the answer equals the reference, both normalised ("1,234" = "1234", "12.0" = "12"). */
  z.object({ kind: z.literal('final-number') }).strict(),
  /** The answer, trimmed, equals the reference, trimmed. */
  z.object({ kind: z.literal('exact') }).strict(),
  /**
   * The pattern's first match in the trimmed answer: its group named `answer`, else its first capture
   * group, else the whole match, equals the reference exactly. No match: wrong.
   */
  z
    .object({
      kind: z.literal('regex'),
      pattern: z.string().min(1),
      flags: z
        .string()
        .regex(/^[dgimsuvy]*$/, 'flags: JavaScript RegExp flags (d g i m s u v y)')
        .optional(),
    })
    .strict()
    .superRefine((g, ctx) => {
      const why = regexError(g.pattern, g.flags);
      if (why) ctx.addIssue({ code: 'custom', path: ['pattern'], message: `not a JavaScript regular expression: ${why}` });
    }),
  /** The first standalone letter A–E of the answer equals the reference letter. */
  z.object({ kind: z.literal('choice') }).strict(),
]);
export type GraderSpec = z.infer<typeof graderSchema>;
export type GraderKind = GraderSpec['kind'];

/** task.json: what the task is and how its answers are graded. */
export const taskHeaderSchema = z
  .object({
    name: z.string().min(1).max(64),
    description: z.string().max(500).optional(),
    grader: graderSchema,
  })
  .strict();
export type TaskHeader = z.infer<typeof taskHeaderSchema>;

const chatMessageSchema = z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() }).strict();
export type TaskMessage = z.infer<typeof chatMessageSchema>;

/** A reference answer: a string, or a number written as JSON (kept as its JSON text). */
const answerSchema = z.union([z.string(), z.number()]).transform((a) => String(a));

/** One JSONL line: the question as a chat (`messages`) or as one user message (`prompt`), exactly one of them, and the reference answer. */
export const taskLineSchema = z
  .object({
    id: z.union([z.string(), z.number()]).optional(),
    prompt: z.string().min(1).optional(),
    messages: z
      .array(chatMessageSchema)
      .min(1)
      .refine((m) => m.some((x) => x.role === 'user'), 'needs at least one message with role "user"')
      .optional(),
    answer: answerSchema,
  })
  .strict()
  .superRefine((l, ctx) => {
    if ((l.prompt === undefined) === (l.messages === undefined))
      ctx.addIssue({
        code: 'custom',
        path: [l.prompt === undefined ? 'prompt' : 'messages'],
        message: 'give exactly one of "prompt" (one user message) and "messages" (a chat)',
      });
  });
export type TaskLine = z.infer<typeof taskLineSchema>;

// A request's output constraint, defined once: what the entry compiles from the API and every engine enforces.
import { z } from 'zod';

const int = z.number().int();

/**
 * The grammar a constrained answer must match, as the API asked for it. Every engine that writes a
 * token of the answer compiles the same grammar for its vocabulary (cached per vocabulary and
 * grammar) and masks its draw with it.
 */
export const grammarSpecSchema = z.discriminatedUnion('kind', [
  /** Any JSON object (`response_format: {type: "json_object"}`). */
  z.object({ kind: z.literal('json_object') }),
  /** JSON matching a JSON Schema, given as its JSON text (`response_format` json_schema, `guided_json`). */
  z.object({ kind: z.literal('json_schema'), schema: z.string() }),
  /** A regular expression the whole answer matches (`guided_regex`). */
  z.object({ kind: z.literal('regex'), pattern: z.string() }),
  /** Exactly one of these strings (`guided_choice`). */
  z.object({ kind: z.literal('choice'), choices: z.array(z.string()).min(1) }),
  /** An EBNF grammar in xgrammar's (GBNF-like) syntax, root rule `root` (`guided_grammar`). */
  z.object({ kind: z.literal('ebnf'), grammar: z.string() }),
  /** An xgrammar structural tag, as its JSON text (tool calls under `tool_choice` required or named). */
  z.object({ kind: z.literal('structural_tag'), tag: z.string() }),
]);

/** A request's constraint: the grammar, and where in the answer it begins. */
export const constraintSchema = z.object({
  grammar: grammarSpecSchema,
  /**
   * Absent: the grammar covers the whole answer. Present: the answer is free until the first of
   * these token ids is committed (a reasoning model's end-of-thought, e.g. Qwen3's `</think>`),
   * and the grammar covers what follows it.
   */
  startAfter: z.array(int).readonly().optional(),
});

export type GrammarSpec = z.infer<typeof grammarSpecSchema>;
export type Constraint = z.infer<typeof constraintSchema>;

// Structural tags whose JSON-schema contents are compiled without free whitespace, as json_schema grammars are.
import type { Constraint } from '../../shared/protocol/constraint.ts';
import { schemaEbnf } from './schemaEbnf.ts';
import { loadXGrammar } from './xgrammar.ts';

/**
 * A structural tag's JSON-schema contents as grammars without free whitespace (compact separators,
 * as runtime/grammar compiles json_schema): xgrammar's structural tags allow any whitespace inside
 * JSON, and a weak model spends its whole budget on it before a call closes (seen on random weights).
 */
export async function compactTags(c: Constraint): Promise<Constraint> {
  if (c.grammar.kind !== 'structural_tag') return c;
  const tag = JSON.parse(c.grammar.tag) as { format?: { tags?: { content?: { type?: string; json_schema?: unknown } }[] } };
  const tags = tag.format?.tags ?? [];
  if (!tags.some((t) => t.content?.type === 'json_schema')) return c;
  const xg = await loadXGrammar();
  for (const t of tags) {
    if (t.content?.type !== 'json_schema') continue;
    t.content = { type: 'grammar', grammar: schemaEbnf(xg, t.content.json_schema) } as never;
  }
  return { ...c, grammar: { kind: 'structural_tag', tag: JSON.stringify(tag) } };
}

// Structural tags whose JSON-schema contents are compiled without free whitespace, as json_schema grammars are.
import type { Constraint } from '../../shared/protocol/constraint.ts';
import { tightenNumberBounds } from './numberBounds.ts';
import { loadXGrammar } from './xgrammar.ts';

interface SchemaBinding {
  _JSONSchemaToEBNF(schema: string, anyWhitespace: boolean, indent: undefined, separators: { first: string; second: string }, strict: boolean, maxWhitespace: undefined, format: unknown): string;
  JSONFormat: { kJSON: unknown };
}

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
  const b = xg.binding as unknown as SchemaBinding;
  for (const t of tags) {
    if (t.content?.type !== 'json_schema') continue;
    const schema = JSON.stringify(tightenNumberBounds(t.content.json_schema));
    t.content = { type: 'grammar', grammar: xg.call(() => b._JSONSchemaToEBNF(schema, false, undefined, { first: ',', second: ':' }, true, undefined, b.JSONFormat.kJSON)) } as never;
  }
  return { ...c, grammar: { kind: 'structural_tag', tag: JSON.stringify(tag) } };
}


// A JSON schema as xgrammar EBNF (compact separators, no free whitespace), its bounded numbers as exact ranges.
import { numberBounds } from './numberBounds.ts';
import type { XGrammar } from './xgrammar.ts';

interface SchemaBinding {
  _JSONSchemaToEBNF(
    schema: string,
    anyWhitespace: boolean,
    indent: undefined,
    separators: { first: string; second: string },
    strict: boolean,
    maxWhitespace: undefined,
    format: unknown,
  ): string;
  JSONFormat: { kJSON: unknown };
}

/**
 * xgrammar converts the schema with each bounded number replaced by a string constant of a marker
 * no schema holds; each marker's literal in the EBNF is then swapped for that number's exact range
 * (runtime/grammar/numberBounds.ts says why). Throws with xgrammar's message for a schema it refuses.
 */
export function schemaEbnf(xg: XGrammar, schema: unknown): string {
  const text = JSON.stringify(schema);
  let prefix = '__tokenrouter_range_';
  while (text.includes(prefix)) prefix += 'x_';
  const ranges: string[] = [];
  const rewritten = numberBounds(schema, (ebnf) => ({ type: 'string', const: `${prefix}${ranges.push(ebnf) - 1}__` }));
  const b = xg.binding as unknown as SchemaBinding;
  let out = xg.call(() => b._JSONSchemaToEBNF(JSON.stringify(rewritten), false, undefined, { first: ',', second: ':' }, true, undefined, b.JSONFormat.kJSON));
  // the converter writes a string constant c as the EBNF literal of JSON.stringify(c)
  ranges.forEach((ebnf, i) => (out = out.split(JSON.stringify(JSON.stringify(`${prefix}${i}__`))).join(`(${ebnf})`)));
  if (out.includes(prefix)) throw new Error(`a bounded number's marker was left in the grammar (xgrammar wrote a string constant another way): ${prefix}`);
  return out;
}

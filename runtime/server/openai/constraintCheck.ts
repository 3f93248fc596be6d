// A planned request's constraint compiled for every vocabulary its models read, before anything is queued: a grammar the library refuses is a 400 naming the field.
import { tightenNumberBounds } from '../../grammar/numberBounds.ts';
import { checkConstraint } from '../../grammar/checkConstraint.ts';
import { engineVocabulary, folderVocabulary } from '../../grammar/modelVocabulary.ts';
import type { GrammarVocabulary } from '../../grammar/vocabulary.ts';
import type { TokenRouterService } from '../../serve/tokenRouterService.ts';
import type { Plan } from './requestPlan.ts';
import { loadXGrammar } from '../../grammar/xgrammar.ts';
import type { Constraint } from '../../../shared/protocol/constraint.ts';

interface SchemaBinding {
  _JSONSchemaToEBNF(schema: string, anyWhitespace: boolean, indent: undefined, separators: { first: string; second: string }, strict: boolean, maxWhitespace: undefined, format: unknown): string;
  JSONFormat: { kJSON: unknown };
}

/**
 * A structural tag's JSON-schema contents as grammars without free whitespace (compact separators,
 * as runtime/grammar compiles json_schema): xgrammar's structural tags allow any whitespace inside
 * JSON, and a weak model spends its whole budget on it before a call closes (seen on random weights).
 */
async function compactTags(c: Constraint): Promise<Constraint> {
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

/** Compiles (or finds cached) the plan's grammars per distinct vocabulary of the models that may write the answer; the plan's jobs get the constraint as compiled. */
export async function checkPlanConstraint(service: TokenRouterService, plan: Plan, draftIr: unknown): Promise<void> {
  if (!plan.constraint && plan.checks.length === 0) return;
  const { algorithm } = service.resolve(plan.model, draftIr);
  const vocabularies: GrammarVocabulary[] = [];
  for (const m of algorithm.models) {
    const folder = service.folders.get(m);
    const info = service.info(m);
    const v = folder ? folderVocabulary(folder) : info && engineVocabulary(service.tokenizer, info);
    if (v) vocabularies.push(v);
  }
  for (const c of plan.checks) await checkConstraint({ grammar: c.grammar }, vocabularies, c.param, { enforced: false });
  if (!plan.constraint) return;
  const constraint = await compactTags(plan.constraint.constraint);
  await checkConstraint(constraint, vocabularies, plan.constraint.param);
  plan.constraint.constraint = constraint;
  for (const job of plan.jobs) job.params.constraint = constraint;
}

// The entry's check of a request's constraint before it is queued: its shape, one vocabulary, a grammar that compiles and can begin.
import { constraintSchema, type Constraint } from '../../shared/protocol/constraint.ts';
import { TokenRouterError } from '../errors.ts';
import { ConstraintState } from './constraintState.ts';
import { compileGrammar, vocabKey, type CompiledGrammar } from './grammarCache.ts';
import { sameVocabulary, type GrammarVocabulary } from './vocabulary.ts';
import { loadXGrammar } from './xgrammar.ts';

/**
 * Checks a request's constraint before it is queued: its shape, that its models share one
 * vocabulary, and that xgrammar compiles it for that vocabulary (the compiled grammar stays cached
 * for the engines of this process). Throws TokenRouterError('invalid_request') naming `param` (the
 * API field the constraint came from, e.g. "response_format.json_schema.schema"); a vocabulary
 * mismatch names "model". `enforced: false`: a grammar only checked (a tool's parameters under
 * `tool_choice: "none"` or `"auto"`), not one the answer must begin with.
 */
export async function checkConstraint(
  constraint: Constraint,
  vocabularies: readonly GrammarVocabulary[],
  param: string,
  opts: { enforced?: boolean } = {},
): Promise<void> {
  const parsed = constraintSchema.safeParse(constraint);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TokenRouterError('invalid_request', `${param}: ${issue.path.join('.') || 'constraint'}: ${issue.message}`, param);
  }
  if (vocabularies.length === 0) return;
  sameVocabulary(vocabularies);
  const seen = new Set<string>();
  for (const v of vocabularies) {
    const key = vocabKey(v);
    if (seen.has(key)) continue;
    seen.add(key);
    let compiled: CompiledGrammar;
    try {
      compiled = await compileGrammar(parsed.data.grammar, v);
    } catch (e) {
      throw new TokenRouterError('invalid_request', `${param}: ${(e as Error).message}`, param);
    }
    if (opts.enforced === false) continue;
    // a vocabulary that cannot write the grammar's first character (a small raw vocabulary and JSON's "{") could only fail mid-step
    const state = new ConstraintState(await loadXGrammar(), compiled, 0, undefined);
    try {
      if (!state.mask([])?.some((w) => w !== 0))
        throw new TokenRouterError('invalid_request', `${param}: no token of model ${v.name}'s vocabulary can begin an answer this grammar accepts`, param);
    } finally {
      state.dispose();
    }
  }
}

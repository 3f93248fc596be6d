// A planned request's constraint compiled for every vocabulary its models read, before anything is queued: a grammar the library refuses is a 400 naming the field.
import { checkConstraint } from '../../grammar/checkConstraint.ts';
import { engineVocabulary, folderVocabulary } from '../../grammar/modelVocabulary.ts';
import type { GrammarVocabulary } from '../../grammar/vocabulary.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';
import type { Plan } from './requestPlan.ts';
import { compactTags } from '../../grammar/compactTags.ts';

/** Compiles (or finds cached) the plan's grammars per distinct vocabulary of the models that may write the answer; the plan's jobs get the constraint as compiled. */
export async function checkPlanConstraint(service: TokenRouterService, plan: Plan, draftIr: unknown): Promise<void> {
  if (!plan.constraint && plan.checks.length === 0) return;
  const { algorithm } = service.algorithms.resolve(plan.model, draftIr);
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

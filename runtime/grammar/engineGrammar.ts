// The grammars beside one engine: its model's vocabulary, and each constrained request's state, made once its grammar is compiled.
import type { Constraint } from '../../shared/protocol/constraint.ts';
import type { ModelInfo } from '../../shared/protocol/runnerProtocol.ts';
import { TokenRouterError } from '../errors.ts';
import { ConstraintState } from './constraintState.ts';
import { compileGrammar, compiledGrammarNow, isCompiled } from './grammarCache.ts';
import { engineVocabulary } from './modelVocabulary.ts';
import { xgrammarNow } from './xgrammar.ts';

type Info = Pick<ModelInfo, 'name' | 'vocabSize' | 'eosTokenIds'>;

export class EngineGrammar {
  constructor(
    /** The tokenizer beside the engine (a TextTokenizer or TokenDecoder has a vocabulary; a simulated runner's decoder has none). */
    private readonly decoder: unknown,
  ) {}

  /**
   * Null when `create` can answer at once; else a promise that settles once it can (xgrammar loads,
   * the grammar compiles for this vocabulary): the engine holds the request until then.
   */
  prepare(c: Constraint, info: Info): Promise<unknown> | null {
    const vocab = engineVocabulary(this.decoder, info);
    if (!vocab || isCompiled(c.grammar, vocab)) return null;
    // a grammar that does not compile is cached as such: `create` reports it
    return compileGrammar(c.grammar, vocab).catch(() => undefined);
  }

  /** The request's state on this engine; throws TokenRouterError when the grammar cannot be enforced here. */
  create(c: Constraint, promptLength: number, info: Info): ConstraintState {
    const vocab = engineVocabulary(this.decoder, info);
    if (!vocab)
      throw new TokenRouterError(
        'invalid_request',
        `model "${info.name}" has no tokenizer vocabulary beside its engine, so it cannot enforce a grammar`,
        'model',
      );
    if (vocab.stopTokenIds.length === 0)
      throw new TokenRouterError('invalid_request', `model "${info.name}" has no EOS id, so a grammar could never end its answer`, 'model');
    const xg = xgrammarNow();
    if (!xg) throw new TokenRouterError('internal', `model "${info.name}": xgrammar is not loaded (prepare first)`, 'constraint');
    try {
      return new ConstraintState(xg, compiledGrammarNow(xg, c.grammar, vocab), promptLength, c.startAfter);
    } catch (e) {
      throw new TokenRouterError('invalid_request', `model "${info.name}": ${(e as Error).message}`, 'constraint');
    }
  }
}

// Grammar enforcement in an engine's step: each constrained row's mask at launch, each committed token checked against the grammar.
import type { LocalRequest, RequestSpec } from './localRequest.ts';
import type { Batch } from './engineStats.ts';
import type { Arrival } from '../../shared/protocol/engineProtocol.ts';
import type { EngineGrammar } from '../grammar/engineGrammar.ts';
import type { ConstraintState } from '../grammar/constraintState.ts';
import type { ModelInfo } from '../../shared/protocol/runnerProtocol.ts';
import { TokenRouterError } from '../errors.ts';

/** What of its host an engine's grammars need: the grammars beside it, and a way to run an arrival again later. */
interface GrammarHost {
  readonly grammar: EngineGrammar;
  arrive(arrivals: readonly Arrival[]): void;
}

/** Rows that sample their request's next token draw under its grammar's mask; a sequence it refuses fails the request when its row comes back. */
export function maskRows(batch: Batch): void {
  const { locals, rows } = batch;
  for (let i = 0; i < locals.length; i++) {
    const local = locals[i];
    const row = rows[i];
    if (!local.grammar || local.grammarError || row.position + row.tokens.length < local.tokens.length) continue;
    try {
      const mask = local.grammar.mask(local.tokens);
      // a dead end of this vocabulary under the grammar fails this request alone, not the step
      if (mask && !mask.some((w) => w !== 0)) local.grammarError = new Error('no token of its vocabulary continues the answer under the grammar');
      else if (mask) {
        row.mask = mask;
        batch.maskedRows++;
      }
    } catch (e) {
      local.grammarError = e as Error;
    }
  }
}

/** The grammar takes the token just appended; when it refuses, the token is taken back (never committed) and the error is returned. */
export function acceptCommitted(local: LocalRequest, model: string): TokenRouterError | undefined {
  try {
    local.grammar!.sync(local.tokens);
    return undefined;
  } catch (e) {
    local.tokens.pop();
    return new TokenRouterError('runner_error', `${model}: ${(e as Error).message} (did the runner honour the mask?)`);
  }
}

/** A constrained request's grammar state for a new local here, or the TokenRouterError saying why this engine cannot enforce it. */
export function newGrammarState(host: GrammarHost, spec: RequestSpec, info: ModelInfo): ConstraintState | TokenRouterError {
  try {
    return host.grammar.create(spec.constraint!, spec.promptLength, info);
  } catch (e) {
    if (e instanceof TokenRouterError) return e;
    throw e;
  }
}

/** A constrained request with no grammar state here waits outside the queue while its grammar compiles, so the loop runs on. True: it waits. */
export function heldForGrammar(host: GrammarHost, a: Arrival, info: ModelInfo, held: LocalRequest | undefined): boolean {
  if (held?.grammar) return false;
  const ready = host.grammar.prepare(a.spec.constraint!, info);
  if (!ready) return false;
  void ready.then(() => host.arrive([a]));
  return true;
}

// Why an engine refuses a request arriving at it: its algorithm's receive failed, no tokenizer for its text, or a restart lost its state.
import { TokenRouterError } from '../errors.ts';
import type { Arrival } from './messages.ts';

/**
 * The error the arrival fails with here, or null to take it. `receiveFail`: the algorithm's `receive`
 * failed, saying this; `held`: this engine holds the request already.
 */
export function refuseArrival(model: string, a: Arrival, receiveFail: string | undefined, hasTokenizer: boolean, held: boolean): TokenRouterError | null {
  if (receiveFail !== undefined) return new TokenRouterError('algorithm_error', `${a.spec.algorithm.name}.receive: ${receiveFail}`);
  if (a.text && !hasTokenizer)
    return new TokenRouterError('internal', `model ${model}'s engine has no tokenizer beside it, so it cannot detokenise this request`, 'model');
  // Only after this engine restarted: the sender still counted on the KV that died with it.
  if (!held && !a.context && a.handoff.anchor !== 0)
    return new TokenRouterError(
      'unavailable',
      `model ${model} restarted and lost this request's state (it came back at position ${a.handoff.anchor})`,
      'model',
    );
  return null;
}

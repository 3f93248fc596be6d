// What a submission must satisfy before the entry takes it: its models are here and up, its prompt and limits fit.
import { TokenRouterError } from '../errors.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import type { SubmitOptions } from './requestState.ts';

/** The context every engine the algorithm runs on fits; throws the client's error otherwise. */
export function checkSubmission(opts: SubmitOptions, engines: readonly EngineHandle[]): number {
  const alg = opts.algorithm;
  const lanes = alg.models.map((name) => {
    const lane = engines.find((e) => e.name === name);
    if (!lane) throw new TokenRouterError('not_found', `algorithm ${alg.name} needs model "${name}", which this server does not run`, 'model');
    return lane;
  });
  // a model that can only make a request wait (a remote one cut off from NATS) refuses it rather than let it hold a slot
  for (const l of lanes) {
    const refusal = l.admissionError?.();
    if (refusal) throw refusal;
  }
  const down = lanes.find((l) => l.down);
  if (down) throw new TokenRouterError('model_unavailable', `model ${down.name} is down; retry shortly`, 'model', { retry_after_s: 1 });
  if (!(alg.entry >= 1 && alg.entry <= lanes.length)) {
    throw new TokenRouterError('invalid_request', `algorithm ${alg.name}: entry model ${alg.entry} is not in 1..${lanes.length}`, 'model');
  }
  if (opts.prompt.length === 0) throw new TokenRouterError('invalid_request', 'the prompt is empty', 'prompt');
  if (!Number.isInteger(opts.maxTokens) || opts.maxTokens < 1) {
    throw new TokenRouterError('invalid_request', `max_tokens must be an integer ≥ 1, got ${opts.maxTokens}`, 'max_tokens');
  }
  const maxContext = Math.min(...lanes.map((l) => l.info.maxContext));
  if (!opts.algorithmRef && lanes.some((l) => !l.core))
    throw new TokenRouterError('invalid_request', `algorithm ${alg.name} runs on an engine thread, so it needs an algorithmRef`, 'algorithm');
  if (opts.prompt.length >= maxContext) {
    throw new TokenRouterError('invalid_request', `the prompt has ${opts.prompt.length} tokens; the context window is ${maxContext}`, 'prompt');
  }
  // a request whose KV could never be placed, even in an empty pool, is refused now rather than wait forever
  const need = Math.min(opts.prompt.length + opts.maxTokens, maxContext);
  const tight = lanes.reduce((a, l) => (l.kvCapacityTokens < a.kvCapacityTokens ? l : a));
  if (need > tight.kvCapacityTokens) {
    throw new TokenRouterError(
      'too_large',
      `the request needs ${need} KV tokens (prompt ${opts.prompt.length} + max_tokens ${opts.maxTokens}), more than model ${tight.name}'s whole KV pool holds (${tight.kvCapacityTokens} tokens within memory.budgetMiB); lower max_tokens or raise the budget`,
      'max_tokens',
    );
  }
  return maxContext;
}

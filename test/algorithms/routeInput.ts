// Test helper: hand-made RouteInput and SendRequest values with neutral defaults.
import type { ModelId, RouteInput, SendRequest } from '../../shared/algorithm.ts';

export function routeInput<M>(meta: M, over: Partial<RouteInput<M>> = {}): RouteInput<M> {
  return {
    token: 7,
    entropy: 0,
    maxProb: 1,
    margin: 1,
    tokenProb: 1,
    topIds: [],
    topProbs: [],
    heads: {},
    model: 1,
    position: 10,
    stepsHere: 1,
    generated: 0,
    draw: 0.5,
    meta,
    ...over,
  };
}

export function sendRequest<M>(result: RouteInput<M>, to: ModelId, unseen: readonly number[] = [3, 4]): SendRequest<M> {
  return { requestId: 'r1', from: result.model, to, result, unseen, anchor: result.position - unseen.length, meta: result.meta };
}

// The reference: one request interpreted step by step over the same runners, no batching, no scheduler.
import { routeInput, standardReceive, standardSend, type Algorithm, type ModelId } from '../../shared/algorithm.ts';
import { wantsFor } from '../../shared/algorithm.ts';
import { GREEDY, type ModelRunner, type SamplingParams } from '../../runtime/runner/modelRunner.ts';
import { draw3 } from '../../runtime/util/hash.ts';

export interface OracleResult {
  tokens: number[];
  producedBy: string[];
  handoffs: number;
  discarded: number;
  finishReason: 'stop' | 'length';
}

let oracleCacheIds = 1 << 30;

/**
 * Runs `algorithm` on one request exactly as the contract in shared/algorithm.ts reads: decode on the current model, route,
 * send the unseen suffix, receive, let the peer catch up lazily. Runners are looked up by name.
 */
export async function runOracle<M>(
  algorithm: Algorithm<M>,
  runners: ReadonlyMap<string, ModelRunner> | Record<string, ModelRunner>,
  request: { id?: string; prompt: readonly number[]; maxTokens: number; minTokens?: number; sampling?: Partial<SamplingParams> },
): Promise<OracleResult> {
  const get = (name: string) => (runners instanceof Map ? runners.get(name) : (runners as Record<string, ModelRunner>)[name]);
  const models = algorithm.models.map((name) => {
    const r = get(name);
    if (!r) throw new Error(`oracle: no runner for model ${name}`);
    return r;
  });
  const id = request.id ?? 'oracle';
  const sampling = { ...GREEDY, ...request.sampling };
  // below min_tokens the models' EOS ids and the stop ids are left out of the draw, as the runtime does
  const belowMin = { ...sampling, suppressEos: true };
  const minTokens = Math.min(request.minTokens ?? 0, request.maxTokens);
  const k = models.length + 1;
  const tokens = request.prompt.slice();
  const promptLength = tokens.length;
  const maxLength = Math.min(promptLength + request.maxTokens, ...models.map((r) => r.info.maxContext));
  const known = new Array<number>(k).fill(0);
  const fed = new Array<number>(k).fill(0);
  const cacheIds = Array.from({ length: k }, () => oracleCacheIds++);
  const producedBy: string[] = [];
  let meta = algorithm.initMeta();
  let owner: ModelId = algorithm.entry;
  let stepsHere = 0;
  let handoffs = 0;
  let discarded = 0;
  known[owner] = tokens.length;
  const commit = (token: number, m: ModelId): 'stop' | 'length' | null => {
    if (models[m - 1].info.eosTokenIds.includes(token) || sampling.stopTokenIds?.includes(token)) return 'stop';
    tokens.push(token);
    producedBy.push(algorithm.models[m - 1]);
    return tokens.length >= maxLength ? 'length' : null;
  };
  try {
    for (;;) {
      const runner = models[owner - 1];
      const out = await runner.step([
        {
          cacheId: cacheIds[owner],
          requestId: id,
          tokens: tokens.slice(fed[owner]),
          position: fed[owner],
          sampling: producedBy.length < minTokens ? belowMin : sampling,
          wants: wantsFor(algorithm as Algorithm<unknown>, owner),
        },
      ]);
      fed[owner] = tokens.length;
      const sig = out.rows[0];
      stepsHere++;
      const position = tokens.length;
      const input = routeInput(sig, owner, position, stepsHere, tokens.length - promptLength, draw3(sampling.seed >>> 0, position, owner), meta);
      const target = algorithm.route(input);
      if (target === 0 || target === owner) {
        const end = commit(sig.token, owner);
        if (end) return { tokens: tokens.slice(promptLength), producedBy, handoffs, discarded, finishReason: end };
        continue;
      }
      const anchor = known[target];
      const sendReq = { requestId: id, from: owner, to: target, result: input, unseen: tokens.slice(anchor), anchor, meta };
      const handoff = algorithm.send ? algorithm.send(sendReq) : standardSend(sendReq, true);
      if (handoff.keep) {
        const end = commit(sig.token, owner);
        if (end) return { tokens: tokens.slice(promptLength), producedBy, handoffs, discarded, finishReason: end };
      } else discarded++;
      known[owner] = tokens.length;
      handoffs++;
      meta = (algorithm.receive ?? standardReceive)(handoff).meta;
      known[target] = handoff.anchor + handoff.tokens.length;
      owner = target;
      stepsHere = 0;
    }
  } finally {
    for (let m = 1; m < k; m++) if (fed[m] > 0) models[m - 1].release(cacheIds[m]);
  }
}

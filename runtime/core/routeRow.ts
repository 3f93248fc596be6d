// Pure routing of one row's result: route → send (or stay), EOS and length limits, as data the step applies.
import {
  routeInput,
  standardReceive,
  standardSend,
  type Algorithm,
  type Handoff,
  type ModelId,
  type SendRequest,
  type TokenSignals,
} from '../../shared/algorithm.ts';
import { draw3 } from '../util/hash.ts';
import type { RequestSpec } from './localRequest.ts';

/** What routing reads about one request on the model that just stepped it (a LocalRequest). Never mutated here (route may update `meta`, which it owns). */
export interface RowView {
  readonly spec: Pick<RequestSpec, 'id' | 'algorithm' | 'models' | 'drawSeed' | 'maxLength'>;
  /** The model that produced the result (1-based). */
  readonly model: ModelId;
  /** The committed sequence, prompt included; known[m]: how much of it model m has seen. */
  readonly tokens: readonly number[];
  readonly known: readonly number[];
  /** Forward passes on this model since it last arrived, this one included. */
  readonly stepsHere: number;
  readonly generated: number;
  readonly meta: unknown;
}

/** The decision for one row: `commit` is the token to append. A handoff whose kept token ends the request is a finish: nothing crosses. */
export type RowDecision =
  | { kind: 'stay'; commit: number }
  | { kind: 'finish'; reason: 'stop' | 'length'; commit?: number }
  | { kind: 'handoff'; to: ModelId; handoff: Handoff<unknown>; commit?: number; at: number }
  | { kind: 'fail'; fn: 'route' | 'send'; message: string };

/** `eos`: the stepping model's EOS ids; `stop`: the request's stop_token_ids. Either ends the request uncommitted. */
export function routeRow(v: RowView, sig: TokenSignals, eos: readonly number[], stop?: readonly number[]): RowDecision {
  const { spec, model: m } = v;
  const position = v.tokens.length;
  const input = routeInput(sig, m, position, v.stepsHere, v.generated, draw3(spec.drawSeed, position, m), v.meta);
  let target: ModelId;
  try {
    target = spec.algorithm.route(input);
  } catch (e) {
    return fail('route', e);
  }
  if (target === 0 || target === m) return commitOrFinish(v, sig.token, eos, stop) ?? { kind: 'stay', commit: sig.token };
  if (!Number.isInteger(target) || target < 0 || target > spec.models.length) {
    return { kind: 'fail', fn: 'route', message: `returned ${target}; expected 0 or a model id in 1..${spec.models.length}` };
  }
  const anchor = v.known[target];
  const sendReq: SendRequest<unknown> = {
    requestId: spec.id,
    from: m,
    to: target,
    result: input,
    unseen: v.tokens.slice(anchor),
    anchor,
    meta: input.meta,
  };
  let handoff: Handoff<unknown>;
  try {
    handoff = spec.algorithm.send ? spec.algorithm.send(sendReq) : standardSend(sendReq, true);
    checkHandoff(handoff, sendReq);
  } catch (e) {
    return fail('send', e);
  }
  if (!handoff.keep) return { kind: 'handoff', to: target, handoff, at: v.generated };
  return commitOrFinish(v, sig.token, eos, stop) ?? { kind: 'handoff', to: target, handoff, commit: sig.token, at: v.generated };
}

/** An arriving handoff through the algorithm's `receive` (the entry's first placement skips it: there is nothing to receive). */
export function receiveRow(algorithm: Algorithm<unknown>, handoff: Handoff<unknown>): { meta: unknown } | { fail: string } {
  if (handoff.from === 0) return { meta: handoff.meta };
  try {
    return { meta: (algorithm.receive ?? standardReceive)(handoff).meta };
  } catch (e) {
    return { fail: e instanceof Error ? e.message : String(e) };
  }
}

/** An EOS or stop id ends the request uncommitted; the token that reaches the length limit is committed and ends it. */
function commitOrFinish(v: RowView, token: number, eos: readonly number[], stop: readonly number[] | undefined): RowDecision | null {
  if (eos.includes(token) || (stop !== undefined && stop.includes(token))) return { kind: 'finish', reason: 'stop' };
  if (v.tokens.length + 1 >= v.spec.maxLength) return { kind: 'finish', reason: 'length', commit: token };
  return null;
}

function fail(fn: 'route' | 'send', e: unknown): RowDecision {
  return { kind: 'fail', fn, message: e instanceof Error ? e.message : String(e) };
}

/** A custom send must still carry exactly the unseen suffix, anchored where the peer's view ends. */
function checkHandoff(h: Handoff<unknown>, req: SendRequest<unknown>): void {
  if (h.anchor !== req.anchor || h.to !== req.to || h.from !== req.from || h.requestId !== req.requestId) {
    throw new Error(`handoff for ${req.requestId} must go ${req.from}→${req.to} at anchor ${req.anchor}`);
  }
  const expected = req.unseen.length + (h.keep ? 1 : 0);
  if (h.tokens.length !== expected || (h.keep && h.tokens[expected - 1] !== req.result.token)) {
    throw new Error(`handoff for ${req.requestId} must carry the ${req.unseen.length} unseen tokens${h.keep ? ' plus the kept token' : ''}`);
  }
}

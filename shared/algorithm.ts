// The routing-algorithm contract: route / send / receive over one request.
import type { StepWants, TokenSignals } from './protocol/runnerProtocol.ts';

/** 1-based model id inside an algorithm's model list; 0 in a route decision means "stay here". */
export type ModelId = number;

/** Per-model extras a step must compute for the algorithm (its schema: shared/protocol/runnerProtocol.ts). */
export type { StepWants } from './protocol/runnerProtocol.ts';

/** Distribution summary of one sampled position, computed once by the runner (its schema: shared/protocol/runnerProtocol.ts). */
export type { TokenSignals } from './protocol/runnerProtocol.ts';

/** What route() sees after every forward pass of the current model for one request. */
export interface RouteInput<M> extends TokenSignals {
  /** The model that produced this result. */
  model: ModelId;
  /** Position the sampled token would take in the full sequence (prompt included). */
  position: number;
  /** Forward passes this request has made on this model since it last arrived here. */
  stepsHere: number;
  /** Output tokens committed so far (prompt excluded). */
  generated: number;
  /** A uniform draw in [0, 1) seeded by (request seed, position, model): reproducible randomness. */
  draw: number;
  /** Algorithm-owned per-request metadata; route may update it in place. */
  meta: M;
}

/** What send() sees when route() asked to leave the current model. */
export interface SendRequest<M> {
  requestId: string;
  from: ModelId;
  to: ModelId;
  /** The just-sampled token and its signals. */
  result: RouteInput<M>;
  /** Tokens of the committed sequence the peer has not seen yet, before the sampled token. */
  unseen: readonly number[];
  /** Position in the sequence where `unseen[0]` belongs. */
  anchor: number;
  meta: M;
}

/** What crosses from one model to another. Token context, never KV. */
export interface Handoff<M> {
  type: 'handoff';
  requestId: string;
  from: ModelId;
  to: ModelId;
  /** Position where tokens[0] goes in the peer's context. */
  anchor: number;
  /** The suffix the peer has not seen; ends with the sampled token when `keep` is true. */
  tokens: readonly number[];
  /** True: the sampled token is committed. False: it is discarded and the peer regenerates its position. */
  keep: boolean;
  /** The request has finished; the peer releases its state. */
  done: boolean;
  meta: M;
}

/** Local state a model builds from an incoming handoff. */
export interface LocalState<M> {
  meta: M;
}

export interface Algorithm<M = unknown> {
  /** Registry name, e.g. "r-stitch". */
  name: string;
  /** Model names in id order: models[0] has id 1. */
  models: readonly string[];
  /** The model that prefills the prompt and decodes first. */
  entry: ModelId;
  /** Per-model extras route() needs; missing models get no extras. */
  wants?: Readonly<Record<ModelId, Partial<StepWants>>>;
  /** Fresh metadata for a new request. Must be structured-clone safe: it crosses threads and hosts. */
  initMeta(): M;
  /** After every forward pass: 0 keeps decoding here, another id hands off to that model. */
  route(result: RouteInput<M>): ModelId;
  /** Builds the handoff; defaults to `standardSend(req, true)`. */
  send?(req: SendRequest<M>): Handoff<M>;
  /** Turns an incoming handoff into local state; defaults to accepting the tokens as they are. */
  receive?(handoff: Handoff<M>): LocalState<M>;
}

/** The default send: the unseen suffix, plus the sampled token when it is kept. */
export function standardSend<M>(req: SendRequest<M>, keep: boolean, meta: M = req.meta): Handoff<M> {
  const tokens = keep ? [...req.unseen, req.result.token] : req.unseen;
  return { type: 'handoff', requestId: req.requestId, from: req.from, to: req.to, anchor: req.anchor, tokens, keep, done: false, meta };
}

/** Builds a RouteInput with one fixed shape (an object spread here costs more than the whole step). */
export function routeInput<M>(sig: TokenSignals, model: ModelId, position: number, stepsHere: number, generated: number, draw: number, meta: M): RouteInput<M> {
  return {
    token: sig.token,
    entropy: sig.entropy,
    maxProb: sig.maxProb,
    margin: sig.margin,
    tokenProb: sig.tokenProb,
    topIds: sig.topIds,
    topProbs: sig.topProbs,
    hidden: sig.hidden,
    heads: sig.heads,
    model,
    position,
    stepsHere,
    generated,
    draw,
    meta,
  };
}

/** The default receive: accept the peer's tokens and its metadata. */
export function standardReceive<M>(handoff: Handoff<M>): LocalState<M> {
  return { meta: handoff.meta };
}

export const NO_WANTS: StepWants = Object.freeze({ topK: 0, hidden: false, heads: Object.freeze([]) as readonly string[] });

/** The extras `algorithm` needs on `model`, with defaults filled in. */
export function wantsFor(algorithm: Algorithm<unknown>, model: ModelId): StepWants {
  const w = algorithm.wants?.[model];
  if (!w) return NO_WANTS;
  return w.signals === false
    ? { topK: w.topK ?? 0, hidden: w.hidden ?? false, heads: w.heads ?? [], signals: false }
    : { topK: w.topK ?? 0, hidden: w.hidden ?? false, heads: w.heads ?? [] };
}

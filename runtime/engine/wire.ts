// Messages to and from their thread-boundary form: an algorithm becomes its key, an error its code and text.
import type { Algorithm, TokenSignals } from '../../shared/algorithm.ts';
import { ERROR_CODES, TokenRouterError, type ErrorCode } from '../errors.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { Arrival, EngineEvent, WireArrival, WireError, WireEvent } from './messages.ts';

export function toWireArrival(a: Arrival): WireArrival {
  const { algorithm, ref, ...rest } = a.spec;
  if (!ref) throw new TokenRouterError('invalid_request', `algorithm ${algorithm.name} has no reference (AlgorithmRef), so it cannot run on an engine in another thread`, 'algorithm');
  return { ...a, spec: { ...rest, algorithm: ref.key } };
}

/** undefined: the algorithm's key is not deployed here yet (its deploy may still be on its way). */
export function fromWireArrival(w: WireArrival, algorithm: (key: string) => { alg: Algorithm<unknown>; ref: AlgorithmRef } | undefined): Arrival | undefined {
  const found = algorithm(w.spec.algorithm);
  if (!found) return undefined;
  return { ...w, spec: { ...w.spec, algorithm: found.alg, ref: found.ref } };
}

export function toWireError(e: Error): WireError {
  return e instanceof TokenRouterError ? { code: e.code, message: e.message, param: e.param } : { code: 'internal', message: e.message, param: null };
}

export function fromWireError(w: WireError): TokenRouterError {
  const code = (ERROR_CODES as readonly string[]).includes(w.code) ? (w.code as ErrorCode) : 'internal';
  return new TokenRouterError(code, w.message, w.param);
}

/** The entry reads no hidden state: it stays in the engine's thread. */
function entrySignals(s: TokenSignals): TokenSignals {
  if (!s.hidden) return s;
  const { hidden: _h, ...rest } = s;
  return rest;
}

/** An engine event as it crosses a port: errors as data, no hidden state. */
export function toWireEvent(e: EngineEvent): WireEvent {
  if (e.type === 'commit') return e.signals.hidden ? { ...e, signals: entrySignals(e.signals) } : e;
  if (e.type === 'finish' && e.error) return { ...e, error: toWireError(e.error) };
  return e as WireEvent;
}

/** The entry's form of an event that crossed a port. */
export function fromWireEvent(e: WireEvent): EngineEvent {
  if (e.type === 'finish' && e.error) return { ...e, error: fromWireError(e.error) };
  return e as EngineEvent;
}

// Messages to and from their thread-boundary form: an algorithm becomes its key, an error its code and text.
import type { Algorithm, TokenSignals } from '../../shared/algorithm.ts';
import { ERROR_CODES, TokenRouterError, type ErrorCode } from '../errors.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { Arrival, CommitColumns, EngineEntry, EngineReport, Finish, FromEngine, Moved, WireArrival, WireError, WireEvent } from '../core/messages.ts';
import { COMMIT_COLUMNS } from '../../shared/protocol/engineProtocol.ts';

export function toWireArrival(a: Arrival): WireArrival {
  const { algorithm, ref, ...rest } = a.spec;
  if (!ref)
    throw new TokenRouterError(
      'invalid_request',
      `algorithm ${algorithm.name} has no reference (AlgorithmRef), so it cannot run on an engine in another thread`,
      'algorithm',
    );
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

/** A finish or move as it crosses a port: errors as data. */
export function toWireEvent(e: Finish | Moved): WireEvent {
  if (e.type === 'finish' && e.error) return { ...e, error: toWireError(e.error) };
  return e as WireEvent;
}

/**
 * A report as it crosses a port: its commits as columns (commitColumnsSchema), whose one buffer is
 * transferred, the rest as wire events in order (`event` may add to them).
 */
export function toWireStep(r: EngineReport, event: (e: Finish | Moved) => WireEvent): { message: FromEngine; transfer: ArrayBuffer[] } {
  let n = 0;
  for (const e of r.events) if (e.type === 'commit') n++;
  const events: WireEvent[] = [];
  let commits: CommitColumns | undefined;
  if (n === 0) for (const e of r.events) events.push(event(e as Finish | Moved));
  else {
    const columns = new Int32Array(n * COMMIT_COLUMNS);
    const ids = new Array<string>(n);
    const signals: [number, TokenSignals][] = [];
    let text = '';
    let i = 0;
    for (const e of r.events) {
      if (e.type !== 'commit') {
        events.push(event(e));
        continue;
      }
      ids[i] = e.requestId;
      columns[i] = e.index;
      columns[n + i] = e.token;
      columns[2 * n + i] = e.model;
      columns[3 * n + i] = e.atHandoff ? 1 : 0;
      if (e.text) text += e.text;
      columns[4 * n + i] = text.length;
      if (e.signals) signals.push([i, entrySignals(e.signals)]);
      i++;
    }
    commits = { ids, columns, text, signals };
  }
  const message: FromEngine = { type: 'step', commits, events, trace: r.trace, lane: r.lane!, returned: r.returned };
  return { message, transfer: commits ? [commits.columns.buffer as ArrayBuffer] : [] };
}

/** A step message as the entry applies it: one cascade, commits in their order first (a finish waits for its commits anyway), then the rest. */
export function applyWireStep(entry: EngineEntry, m: Extract<FromEngine, { type: 'step' }>): void {
  entry.cascade(() => {
    if (m.trace.length > 0) entry.traced(m.trace);
    const c = m.commits;
    if (c) {
      const { ids, columns, text, signals } = c;
      const n = ids.length;
      let s = 0;
      let from = 0;
      for (let i = 0; i < n; i++) {
        const end = columns[4 * n + i];
        const sig = s < signals.length && signals[s][0] === i ? signals[s++][1] : undefined;
        entry.commit({
          type: 'commit',
          requestId: ids[i],
          index: columns[i],
          token: columns[n + i],
          model: columns[2 * n + i],
          signals: sig,
          atHandoff: columns[3 * n + i] === 1,
          text: end > from ? text.slice(from, end) : '',
        });
        from = end;
      }
    }
    for (const e of m.events) {
      if (e.type === 'moved') entry.moved(e.requestId, e.to, e.hops);
      else entry.finish(e.error ? { ...e, error: fromWireError(e.error) } : (e as Finish));
    }
    entry.reported(m.returned);
  });
}

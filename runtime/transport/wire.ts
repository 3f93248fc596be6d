// Messages to and from their form across a port: an algorithm becomes its key, an error its code and text, a step's commits columns.
import type { Algorithm } from '../../shared/algorithm.ts';
import { ERROR_CODES, TokenRouterError, type ErrorCode } from '../errors.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { Arrival, EngineEvent, EngineReport, Finish, Moved } from '../core/messages.ts';
import { COMMIT_COLUMNS, type CommitColumns, type FromEngine, type WireArrival, type WireEvent } from '../../shared/protocol/engineProtocol.ts';

type StepMessage = Extract<FromEngine, { type: 'step' }>;

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
  return found && { ...w, spec: { ...w.spec, algorithm: found.alg, ref: found.ref } };
}

export function toWireEvent(e: Finish | Moved): WireEvent {
  if (e.type !== 'finish' || !e.error) return e as WireEvent;
  const { error } = e;
  return {
    ...e,
    error:
      error instanceof TokenRouterError
        ? { code: error.code, message: error.message, param: error.param }
        : { code: 'internal', message: error.message, param: null },
  };
}

/** A report as it leaves for the entry: its commits in columns (one transferred buffer), the rest as wire events in order. */
export function toWireStep(r: EngineReport, event: (e: Finish | Moved) => WireEvent): { message: FromEngine; transfer: ArrayBuffer[] } {
  const commits = r.events.filter((e) => e.type === 'commit');
  const events = r.events.filter((e) => e.type !== 'commit').map(event);
  const n = commits.length;
  let columns: CommitColumns | undefined;
  if (n > 0) {
    const c = new Int32Array(n * COMMIT_COLUMNS);
    const signals: CommitColumns['signals'][number][] = [];
    let text = '';
    commits.forEach((e, i) => {
      c[i] = e.index;
      c[n + i] = e.token;
      c[2 * n + i] = e.model;
      c[3 * n + i] = e.atHandoff ? 1 : 0;
      text += e.text;
      c[4 * n + i] = text.length;
      if (!e.signals) return;
      // the hidden state stays in the engine's thread
      const { hidden: _, ...sig } = e.signals;
      signals.push([i, sig]);
    });
    columns = { ids: commits.map((e) => e.requestId), columns: c, text, signals };
  }
  const message: FromEngine = { type: 'step', commits: columns, events, trace: r.trace, lane: r.lane!, returned: r.returned };
  return { message, transfer: columns ? [columns.columns.buffer as ArrayBuffer] : [] };
}

/** A step message as the entry applies it: commits in their order first (a finish waits for its commits anyway), then the rest. */
export function fromWireStep(m: StepMessage): EngineReport {
  const events: EngineEvent[] = [];
  if (m.commits) {
    const { ids, columns, text, signals } = m.commits;
    const n = ids.length;
    let s = 0;
    let from = 0;
    for (let i = 0; i < n; i++) {
      const end = columns[4 * n + i];
      const sig = s < signals.length && signals[s][0] === i ? signals[s++][1] : undefined;
      events.push({
        type: 'commit',
        requestId: ids[i],
        index: columns[i],
        token: columns[n + i],
        model: columns[2 * n + i],
        signals: sig,
        atHandoff: columns[3 * n + i] === 1,
        text: text.slice(from, end),
      });
      from = end;
    }
  }
  for (const e of m.events) {
    if (e.type === 'finish' && e.error) {
      const code = (ERROR_CODES as readonly string[]).includes(e.error.code) ? (e.error.code as ErrorCode) : 'internal';
      events.push({ ...e, error: new TokenRouterError(code, e.error.message, e.error.param) });
    } else events.push(e as Finish | Moved);
  }
  return { events, trace: m.trace, lane: m.lane, returned: m.returned };
}

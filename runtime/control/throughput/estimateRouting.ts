// Estimates the routing matrix P and committed-token matrix C from recorded per-request steps.
import { ThroughputError } from './ThroughputError.ts';

/** A model by index (0-based) or by name. */
export type ModelRef = number | string;

/**
 * One forward step of one request, as the runtime's trace records it: the model it ran on, where
 * the request went next (`model` again = stayed; null = the request finished) and the tokens that
 * step committed (0 when its token was discarded). When `next` is omitted it is taken from the
 * same request's following record in array order (none = finished).
 */
export interface RoutingStep {
  requestId: string;
  model: ModelRef;
  next?: ModelRef | null;
  committed: number;
}

export interface RoutingOptions {
  /** Names in index order; required to place string model refs that should not follow first appearance. */
  models?: readonly string[];
  /**
   * Where a finished request's replacement starts. The model is a closed system of N requests, so
   * a finish is a transition to the entry model. Default: each request's own first model.
   * Set `closeLoop: false` to drop finishing steps instead.
   */
  entryModel?: ModelRef;
  closeLoop?: boolean;
}

export interface RoutingEstimate {
  models: string[];
  P: number[][];
  C: number[][];
  /** Observed transitions i → j. */
  counts: number[][];
  /** Steps observed per model (row totals of counts). */
  steps: number[];
}

export function estimateRouting(records: readonly RoutingStep[], opts: RoutingOptions = {}): RoutingEstimate {
  const names: string[] = opts.models ? [...opts.models] : [];
  const index = (ref: ModelRef): number => {
    if (typeof ref === 'number') {
      if (!Number.isInteger(ref) || ref < 0) throw new ThroughputError('INVALID_INPUT', `bad model index ${ref}`);
      while (names.length <= ref) names.push(String(names.length));
      return ref;
    }
    let i = names.indexOf(ref);
    if (i < 0) {
      if (opts.models) throw new ThroughputError('INVALID_INPUT', `model "${ref}" is not in models`, { ref });
      names.push(ref);
      i = names.length - 1;
    }
    return i;
  };

  // Resolve implicit `next` and entry models per request, keeping array order within a request.
  const byRequest = new Map<string, RoutingStep[]>();
  for (const r of records) {
    let list = byRequest.get(r.requestId);
    if (!list) byRequest.set(r.requestId, (list = []));
    list.push(r);
  }
  const edges: { from: number; to: number | null; committed: number; entry: number }[] = [];
  for (const list of byRequest.values()) {
    const entry = index(opts.entryModel ?? list[0].model);
    list.forEach((r, k) => {
      const next = r.next !== undefined ? r.next : k + 1 < list.length ? list[k + 1].model : null;
      if (!Number.isFinite(r.committed) || r.committed < 0) {
        throw new ThroughputError('INVALID_INPUT', `committed must be ≥ 0 (request ${r.requestId})`);
      }
      edges.push({ from: index(r.model), to: next === null ? null : index(next), committed: r.committed, entry });
    });
  }
  const closeLoop = opts.closeLoop ?? true;
  const K = names.length;
  if (K === 0) throw new ThroughputError('NO_DATA', 'no routing steps recorded');
  const counts = Array.from({ length: K }, () => new Array<number>(K).fill(0));
  const tokens = Array.from({ length: K }, () => new Array<number>(K).fill(0));
  for (const e of edges) {
    const to = e.to ?? (closeLoop ? e.entry : null);
    if (to === null) continue;
    counts[e.from][to]++;
    tokens[e.from][to] += e.committed;
  }
  const steps = counts.map((row) => row.reduce((a, b) => a + b, 0));
  // A model never observed gets a self-loop row: it is unreachable, and P must stay stochastic.
  const P = counts.map((row, i) => row.map((c, j) => (steps[i] > 0 ? c / steps[i] : i === j ? 1 : 0)));
  const C = counts.map((row, i) => row.map((c, j) => (c > 0 ? tokens[i][j] / c : 0)));
  return { models: names, P, C, counts, steps };
}

// The figures the batch panel lists for one batch (rows a grammar masked among them), as label/value pairs (apart from rendering, so they can be checked without a DOM).
import { PHASE_NAMES, type EventStore } from './eventStore.ts';
import { formatMs, formatRel } from './viewport.ts';

/** Batch `p` (a physical row of the store's batch columns); times relative to `origin`. */
export function batchFigures(store: EventStore, p: number, origin: number): [label: string, value: string][] {
  const col = store.batches.cols;
  const figures: [string, string][] = [
    ['phase', PHASE_NAMES[col.phase[p]]],
    ['size', String(col.size[p])],
    ['tokens fed', String(col.tokens[p])],
    // prompt tokens its rows did not feed: their caches started from the prefix cache
    ['prompt tokens from cache', String(col.cached[p])],
    ['start', formatRel(col.start[p] - origin, 0.01)],
    ['duration', formatMs(col.end[p] - col.start[p], 0.01)],
  ];
  // only where a grammar constrained the draw, so unconstrained traces look as before
  if (col.masked[p] > 0) figures.push(['rows grammar-masked', `${col.masked[p]} of ${col.size[p]}`]);
  if (col.steps[p] > 1) figures.push(['passes (lookahead)', `${col.steps[p]} (${col.aheadRows[p]} rows ahead)`]);
  return figures;
}

// Test helper: a decode batch trace event of n rows, for feeding the live routing estimator by hand.
import type { TraceEventOf } from '../../shared/trace.ts';

let nextId = 0;

export function batchEvent(model: string, n: number, start: number, end: number): TraceEventOf<'batch'> {
  return { type: 'batch', model, batchId: nextId++, requestIds: Array.from({ length: n }, (_, i) => `r${i}`), phase: 'decode', tokens: n, start, end };
}

// The pure planners, table-driven: batch composition, lookahead budget and admission with eviction, from data alone.
import { describe, expect, it } from 'vitest';
import { planAdmission, type AdmissionPlan, type AdmissionView } from '../../runtime/scheduler/planAdmission.ts';
import { aheadCap, planBatch, type BatchPlan, type ReadyRow } from '../../runtime/scheduler/planBatch.ts';

const decode = (over: Partial<ReadyRow> = {}): ReadyRow => ({ fed: 10, unfed: 1, room: 100, belowMin: Infinity, awaitingAhead: false, ...over });

describe('planBatch', () => {
  const cases: [name: string, ready: ReadyRow[], maxBatch: number, cap: number, expected: BatchPlan][] = [
    ['nothing ready plans an empty decode', [], 4, 0, { rows: [], ahead: [], phase: 'decode', tokens: 0 }],
    ['FIFO up to maxBatch', [decode(), decode(), decode()], 2, 0, { rows: [0, 1], ahead: [0, 0], phase: 'decode', tokens: 2 }],
    ['a fresh cache makes it a prefill', [decode(), decode({ fed: 0, unfed: 12 })], 4, 0, { rows: [0, 1], ahead: [0, 0], phase: 'prefill', tokens: 13 }],
    ['a returning row with unseen tokens makes it an extend', [decode({ unfed: 3 }), decode()], 4, 0, { rows: [0, 1], ahead: [0, 0], phase: 'extend', tokens: 4 }],
    ['prefill wins over extend', [decode({ unfed: 3 }), decode({ fed: 0, unfed: 5 })], 4, 0, { rows: [0, 1], ahead: [0, 0], phase: 'prefill', tokens: 8 }],
    ['rows a running batch serves by lookahead wait for it', [decode({ awaitingAhead: true }), decode(), decode()], 2, 0, { rows: [1, 2], ahead: [0, 0], phase: 'decode', tokens: 2 }],
    ['lookahead up to the cap', [decode(), decode()], 4, 3, { rows: [0, 1], ahead: [3, 3], phase: 'decode', tokens: 2 }],
    ['lookahead stops at the length limit', [decode({ room: 1 }), decode({ room: 0 })], 4, 3, { rows: [0, 1], ahead: [1, 0], phase: 'decode', tokens: 2 }],
    ['lookahead stops short of min_tokens', [decode({ belowMin: 2 })], 4, 8, { rows: [0], ahead: [2], phase: 'decode', tokens: 1 }],
  ];
  it.each(cases)('%s', (_name, ready, maxBatch, cap, expected) => {
    expect(planBatch(ready, { maxBatch, aheadCap: cap })).toEqual(expected);
  });
});

describe('aheadCap', () => {
  const cases: [lookahead: number, runnerMax: number, stay: number, expected: number][] = [
    [8, 0, 0.99, 0], // the runner cannot look ahead
    [0, 8, 0.99, 0], // configured off
    [8, 8, 0.5, 0], // rows leave too often
    [8, 8, 1, 8],
    [8, 4, 1, 4], // the runner's own cap
    [8, 8, 0.9, 6], // 0.9^6 ≥ 0.5 > 0.9^7
    [8, 8, 0.8, 3], // 0.8^3 ≥ 0.5 > 0.8^4
  ];
  it.each(cases)('lookahead %d, runner max %d, stay rate %d -> %d', (lookahead, runnerMax, stay, expected) => {
    expect(aheadCap(lookahead, runnerMax, stay)).toBe(expected);
  });
});

describe('planAdmission', () => {
  const cases: [name: string, v: AdmissionView, expected: AdmissionPlan][] = [
    ['nothing waits', { capacity: 100, reserved: 0, waiting: [], evictable: [50] }, { admit: 0, evict: 0 }],
    ['room for all', { capacity: 100, reserved: 10, waiting: [30, 30, 30], evictable: [] }, { admit: 3, evict: 0 }],
    ['FIFO: the head blocks those behind it', { capacity: 100, reserved: 50, waiting: [60, 10], evictable: [] }, { admit: 0, evict: 0 }],
    ['evicts oldest first, only as many as needed', { capacity: 100, reserved: 90, waiting: [30], evictable: [15, 15, 15] }, { admit: 1, evict: 2 }],
    ['evicts nothing when even all would not make room', { capacity: 100, reserved: 95, waiting: [40], evictable: [10, 10] }, { admit: 0, evict: 0 }],
    ['admits several, evicting as it goes', { capacity: 100, reserved: 100, waiting: [20, 20, 50], evictable: [20, 20, 20] }, { admit: 2, evict: 2 }],
    ['exact fit needs no eviction', { capacity: 100, reserved: 70, waiting: [30], evictable: [30] }, { admit: 1, evict: 0 }],
  ];
  it.each(cases)('%s', (_name, v, expected) => {
    expect(planAdmission(v)).toEqual(expected);
  });
});

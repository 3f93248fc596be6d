// The pure planners, table-driven: batch composition and admission with eviction, from data alone.
import { describe, expect, it } from 'vitest';
import { planAdmission, type AdmissionPlan, type AdmissionView } from '../../runtime/core/engineQueues.ts';
import { planBatch, type BatchPlan, type ReadyRow } from '../../runtime/core/engineQueues.ts';

const decode = (over: Partial<ReadyRow> = {}): ReadyRow => ({ fed: 10, unfed: 1, ...over });

describe('planBatch', () => {
  const cases: [name: string, ready: ReadyRow[], maxBatch: number, expected: BatchPlan][] = [
    ['nothing ready plans an empty decode', [], 4, { rows: [], feed: [], phase: 'decode', tokens: 0 }],
    ['FIFO up to maxBatch', [decode(), decode(), decode()], 2, { rows: [0, 1], feed: [1, 1], phase: 'decode', tokens: 2 }],
    ['a fresh cache makes it a prefill', [decode(), decode({ fed: 0, unfed: 12 })], 4, { rows: [0, 1], feed: [1, 12], phase: 'prefill', tokens: 13 }],
    [
      'a returning row with unseen tokens makes it an extend, after the decode rows',
      [decode({ unfed: 3 }), decode()],
      4,
      { rows: [1, 0], feed: [1, 3], phase: 'extend', tokens: 4 },
    ],
    ['prefill wins over extend', [decode({ unfed: 3 }), decode({ fed: 0, unfed: 5 })], 4, { rows: [0, 1], feed: [3, 5], phase: 'prefill', tokens: 8 }],
  ];
  it.each(cases)('%s', (_name, ready, maxBatch, expected) => {
    expect(planBatch(ready, { maxBatch })).toEqual(expected);
  });

  const budgeted: [name: string, ready: ReadyRow[], maxStepTokens: number, expected: BatchPlan][] = [
    ['a long prompt is cut to the budget', [decode({ fed: 0, unfed: 100 })], 16, { rows: [0], feed: [16], phase: 'prefill', tokens: 16 }],
    [
      'decode rows go first, the prompt gets what is left',
      [decode({ fed: 0, unfed: 100 }), decode(), decode()],
      16,
      { rows: [1, 2, 0], feed: [1, 1, 14], phase: 'prefill', tokens: 16 },
    ],
    [
      'a later prompt gets what the first leaves',
      [decode({ fed: 0, unfed: 10 }), decode({ fed: 0, unfed: 10 })],
      16,
      { rows: [0, 1], feed: [10, 6], phase: 'prefill', tokens: 16 },
    ],
    [
      'a spent budget leaves prompts for later steps',
      [decode({ fed: 0, unfed: 10 }), decode(), decode()],
      2,
      { rows: [1, 2], feed: [1, 1], phase: 'decode', tokens: 2 },
    ],
    ['a later chunk of a prompt is an extend', [decode({ fed: 16, unfed: 84 })], 16, { rows: [0], feed: [16], phase: 'extend', tokens: 16 }],
    ['the budget caps decode rows too', [decode(), decode(), decode()], 2, { rows: [0, 1], feed: [1, 1], phase: 'decode', tokens: 2 }],
  ];
  it.each(budgeted)('%s', (_name, ready, maxStepTokens, expected) => {
    expect(planBatch(ready, { maxBatch: 8, maxStepTokens })).toEqual(expected);
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

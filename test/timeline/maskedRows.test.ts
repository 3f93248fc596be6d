// Issue 54 item 5: the timeline keeps a batch's grammar-masked rows, lists them among the batch's figures and exports them again; unconstrained batches say nothing.
import { describe, expect, it } from 'vitest';
import { batchFigures } from '../../designer/src/timeline/batchFigures.ts';
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import type { TraceEventOf } from '../../shared/trace.ts';

const batch = (batchId: number, maskedRows?: number): TraceEventOf<'batch'> => ({
  type: 'batch', model: 'small', batchId, requestIds: ['a', 'b', 'c'], phase: 'decode', tokens: 3, start: batchId, end: batchId + 0.5,
  ...(maskedRows === undefined ? {} : { maskedRows }),
});

describe('grammar-masked rows in the timeline', () => {
  it('lists the masked rows of a batch and exports them; a batch without them lists nothing', () => {
    const store = new EventStore();
    store.addMany([batch(1, 2), batch(2), batch(3, 0)]);
    const [masked, plain, zero] = [0, 1, 2].map((i) => store.batches.phys(i));
    expect(batchFigures(store, masked, 0)).toContainEqual(['rows grammar-masked', '2 of 3']);
    expect(store.batchEvent(masked)).toMatchObject({ batchId: 1, maskedRows: 2 });
    for (const p of [plain, zero]) {
      expect(batchFigures(store, p, 0).map(([label]) => label)).not.toContain('rows grammar-masked');
      expect(store.batchEvent(p)).not.toHaveProperty('maskedRows');
    }
  });
});

// Issue 54 item 5: the timeline keeps a batch's grammar-masked rows, lists them among the batch's figures, exports them again and strips the batch's box; unconstrained batches say nothing.
import { describe, expect, it } from 'vitest';
import { batchFigures } from '../../designer/src/timeline/batchFigures.ts';
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import { batchEvent } from '../../designer/src/timeline/toEvents.ts';
import { computeLayout } from '../../designer/src/timeline/layout.ts';
import { drawBatches } from '../../designer/src/timeline/paint/batches.ts';
import { makeFrame } from '../../designer/src/timeline/paint/frame.ts';
import { THEME } from '../../designer/src/timeline/paint/theme.ts';
import type { TraceEventOf } from '../../shared/trace.ts';
import { RecordingContext, RecordingPath } from './recordingCanvas.ts';

const batch = (batchId: number, maskedRows?: number): TraceEventOf<'batch'> => ({
  type: 'batch',
  model: 'small',
  batchId,
  requestIds: ['a', 'b', 'c'],
  phase: 'decode',
  tokens: 3,
  start: batchId,
  end: batchId + 0.5,
  ...(maskedRows === undefined ? {} : { maskedRows }),
});

describe('grammar-masked rows in the timeline', () => {
  it('lists the masked rows of a batch and exports them; a batch without them lists nothing', () => {
    const store = new EventStore();
    store.addMany([batch(1, 2), batch(2), batch(3, 0)]);
    const [masked, plain, zero] = [0, 1, 2].map((i) => store.batches.phys(i));
    expect(batchFigures(store, masked, 0)).toContainEqual(['rows grammar-masked', '2 of 3']);
    expect(batchEvent(store, masked)).toMatchObject({ batchId: 1, maskedRows: 2 });
    for (const p of [plain, zero]) {
      expect(batchFigures(store, p, 0).map(([label]) => label)).not.toContain('rows grammar-masked');
      expect(batchEvent(store, p)).not.toHaveProperty('maskedRows');
    }
  });
});

describe('grammar-masked batches on the canvas', () => {
  it('draws a strip along the bottom of a masked batch only', () => {
    const store = new EventStore();
    // 0..100 ms over 1000 px: batch 1 (masked) at 10..20 ms, batch 2 (not) at 30..40 ms
    store.addMany([
      { ...batch(1, 2), start: 10, end: 20 },
      { ...batch(2), start: 30, end: 40 },
    ]);
    const layout = computeLayout(store.lanes, 176 + 1000 + 12, 500);
    const v = { t0: 0, t1: 100, x0: layout.plotX0, width: layout.plotWidth };
    const frame = makeFrame(
      store,
      layout,
      v,
      { path: null, selectedBatch: -1, range: null, hover: null, liveNow: null, origin: 0, gauges: new Map() },
      () => new RecordingPath(),
    );
    const ctx = new RecordingContext();
    drawBatches(ctx, frame);
    const lane = layout.lanes[0];
    const strips = ctx.rects().filter((r) => r.color === THEME.masked);
    expect(strips).toHaveLength(1);
    const box = ctx.rects().find((r) => r.color === THEME.phase.decode && r.x === strips[0].x)!;
    expect(box).toBeDefined();
    expect(strips[0]).toMatchObject({ y: lane.batchTop + lane.batchH - 3, h: 3, w: box.w });
  });
});

// Lane order and model colours come from the server's model list: the same at every load, the same in designer and timeline.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import { caseRunner } from '../core/threadSim.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { TraceRecorder } from '../../runtime/trace/traceRecorder.ts';
import { modelColor as designerColor } from '../../designer/src/designer/modelColors.ts';
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import { modelColor as laneColor } from '../../designer/src/timeline/modelColors.ts';

const MODELS = ['small', 'medium', 'large'];
const config: TraceEvent = {
  type: 'config',
  t: 0,
  mode: 'async-delayed',
  retainState: true,
  thresholds: Object.fromEntries(MODELS.map((m) => [m, 1])),
  maxWaitMs: 20,
  lookahead: 0,
};
const batch = (t: number, model: string): TraceEvent => ({
  type: 'batch',
  model,
  batchId: t,
  requestIds: ['r'],
  phase: 'decode',
  tokens: 1,
  start: t,
  end: t + 1,
});

describe('lane order and colours', () => {
  it('a timeline opened late still lays lanes out in the server order, whichever model stepped first in its window', () => {
    const trace = new TraceRecorder(50);
    trace.emit(config);
    // long enough that the config leaves the kept window; the window opens on large, then medium, then small
    for (let t = 1; t <= 200; t++) trace.emit(batch(t, MODELS[2 - (t % 3)]));
    for (const offset of [0, 1, 2]) {
      const store = new EventStore();
      store.addMany(trace.recent(30 - offset));
      expect(store.lanes).toEqual(MODELS);
    }
  });

  it('the designer colours a model as the timeline colours its lane', () => {
    const catalog = MODELS.map((name) => ({ name }));
    const store = new EventStore();
    store.addMany([config]);
    for (const m of MODELS) expect(designerColor(m, catalog)).toBe(laneColor(store.lanes.indexOf(m)));
    expect(new Set(MODELS.map((m) => designerColor(m, catalog))).size).toBe(3);
    // another server's list (large first) moves the colours with it
    const flipped = ['large', 'small'].map((name) => ({ name }));
    expect(designerColor('large', flipped)).toBe(laneColor(0));
  });

  it('the config event names every model in the server order, engines in their own threads included', async () => {
    // npm start runs each ONNX model's engine in a thread: the config must name those too, or lanes fall back to first appearance
    const sim = fileURLToPath(new URL('../core/threadSim.ts', import.meta.url));
    const thread = await ThreadEngine.start('medium', { kind: 'module', module: sim, export: 'caseRunner', args: ['medium', 1, -1] });
    const trace = new TraceRecorder(100);
    try {
      new Cluster({
        clock: createRealClock(),
        mode: 'async-delayed',
        maxConcurrency: 4,
        trace,
        models: [
          { name: 'small', runner: caseRunner('small', 0, -1), maxBatch: 8 },
          { name: 'medium', thread, maxBatch: 8 },
          { name: 'large', runner: caseRunner('large', 2, -1), maxBatch: 8 },
        ],
      });
      const cfg = trace.recent(100).find((e) => e.type === 'config');
      expect(Object.keys(cfg?.type === 'config' ? cfg.thresholds : {})).toEqual(MODELS);
      const store = new EventStore();
      store.addMany([...trace.recent(100), batch(1, 'large'), batch(2, 'medium')]);
      expect(store.lanes).toEqual(MODELS);
    } finally {
      await thread.close();
    }
  }, 20_000);
});

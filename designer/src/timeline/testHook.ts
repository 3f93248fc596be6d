// window.__timeline: what the page draws and a few controls, for e2e tests (read-only views plus explicit actions).
import type { ChromeTrace } from '../../../shared/perfetto.ts';
import type { TraceEvent } from '../../../shared/trace.ts';
import type { RangeStats } from './rangeStats.ts';
import type { TimelineController } from './timelineController.ts';
import { describeTimeline, type TimelineSnapshot } from './timelineSnapshot.ts';
import { timeToX } from './viewport.ts';

export interface TimelineHook {
  /** Plain snapshot of lanes, drawn counts, store and feed counts, view and selected path. */
  snapshot(): TimelineSnapshot;
  frameLog(): { deltas: number[]; draws: number[] };
  startRecording(): void;
  stopRecording(): { deltas: number[]; draws: number[] };
  setView(t0: number, t1: number): void;
  fitAll(): void;
  zoom(factor: number, x?: number): void;
  pan(dx: number): void;
  setFollow(on: boolean): void;
  setPaused(on: boolean): void;
  selectRequest(id: string | null): boolean;
  selectAt(x: number, y: number): boolean;
  batchCenter(model: string, batchId: number): { x: number; y: number } | null;
  setRange(a: number | null, b?: number): void;
  stats(): RangeStats;
  exportChrome(scope?: 'view' | 'all'): ChromeTrace;
  exportEvents(scope?: 'view' | 'all'): TraceEvent[];
  loadText(text: string, name?: string): void;
}

declare global {
  interface Window {
    __timeline?: TimelineHook;
  }
}

export function installTestHook(c: TimelineController): void {
  window.__timeline = {
    snapshot: () => describeTimeline(c),
    frameLog: () => c.frames.recent(),
    startRecording: () => c.frames.startRecording(),
    stopRecording: () => c.frames.stopRecording(),
    setView: (a, b) => c.setView(a, b),
    fitAll: () => c.fitAll(),
    zoom: (f, x) => c.zoom(f, x),
    pan: (dx) => c.pan(dx),
    setFollow: (on) => c.setFollow(on),
    setPaused: (on) => c.setPaused(on),
    selectRequest: (id) => c.selectRequest(id),
    selectAt: (x, y) => c.selectAt(x, y),
    batchCenter: (m, id) => batchCenter(c, m, id),
    setRange: (a, b) => c.setRange(a, b),
    stats: () => c.stats(),
    exportChrome: (scope) => c.exportChrome(scope),
    exportEvents: (scope) => c.exportEvents(scope),
    loadText: (text, name) => c.loadText(text, name ?? 'trace'),
  };
}

/** Canvas CSS-pixel position of a batch's centre (for e2e clicks). */
function batchCenter(c: TimelineController, model: string, batchId: number): { x: number; y: number } | null {
  const b = c.store.batches;
  const lane = c.store.laneOf(model);
  const layout = c.drawnLayout;
  if (!layout || lane < 0) return null;
  for (let i = b.length - 1; i >= 0; i--) {
    const p = b.phys(i);
    if (b.cols.lane[p] !== lane || b.cols.batchId[p] !== batchId) continue;
    const v = c.viewport();
    const l = layout.lanes[lane];
    return { x: (timeToX(v, b.cols.start[p]) + timeToX(v, b.cols.end[p])) / 2, y: l.batchTop + l.batchH / 2 };
  }
  return null;
}

// The timeline page's state and actions: the event store, where it comes from (live feed, demo, file), the view, export and drawing each frame; the selection in timelineSelection.ts.
import { toChromeTrace, type ChromeTrace } from '../../../shared/perfetto.ts';
import type { TraceEvent } from '../../../shared/trace.ts';
import { startDemoFeed } from './demoFeed.ts';
import { exportTraceFile, openTraceFile, type FileSource } from './traceFile.ts';
import { drawTimeline } from './drawTimeline.ts';
import type { DrawStats } from './paint/frame.ts';
import { EventStore } from './eventStore.ts';
import { toEvents } from './toEvents.ts';
import { FrameLog } from './frameLog.ts';
import { connectFeed } from './feed.ts';
import { fetchTraceText, saveJsonFile } from './pageFiles.ts';
import { FeedState, zeroCounts } from './feedState.ts';
import type { FeedConnection, FeedHandlers } from './feedMessages.ts';
import { bindCanvasInput } from './canvasInput.ts';
import { TimelineCanvas } from './timelineCanvas.ts';
import { PanelNotifier } from './panelNotifier.ts';
import { hitBatch } from './hitTest.ts';
import { computeLayout, layoutFits, type Layout } from './layout.ts';
import type { RangeStats } from './rangeStats.ts';
import { TimelineSelection, type SelectedRequest } from './timelineSelection.ts';
import { endAt, fit, panBy, zoomAt, type Viewport } from './viewport.ts';

export type Source = { kind: 'none' } | { kind: 'live' } | { kind: 'demo'; rate: number } | FileSource;

export class TimelineController {
  store: EventStore;
  view = { t0: 0, t1: 3000 };
  follow = false;
  paused = false;
  /** Events that arrived while paused (applied on resume), bounded like the store. */
  private held: TraceEvent[] = [];
  heldDropped = 0;
  source: Source = { kind: 'none' };
  /** What the feed says about itself and the server's clock. */
  readonly feed = new FeedState(() => this.changed());
  origin: number | null = null;
  /** The picked request, batch and range; the getters below read it. */
  readonly selection = new TimelineSelection(
    () => this.store,
    () => this.changed(),
  );
  get selected(): SelectedRequest | null {
    return this.selection.request;
  }
  get selectedBatch(): number {
    return this.selection.batch;
  }
  get range(): [number, number] | null {
    return this.selection.range;
  }
  private hover: { x: number; y: number; batch: number } | null = null;
  lastDraw: DrawStats | null = null;
  /** Frame intervals and draw times, for the toolbar's fps and the perf e2e. */
  readonly frames = new FrameLog();
  private lastTs = 0;
  private dirty = true;
  private drawnVersion = -1;
  private layout: Layout | null = null;
  /** The layout of the last frame drawn; null before the first. */
  get drawnLayout(): Layout | null {
    return this.layout;
  }
  private readonly canvas = new TimelineCanvas({
    frame: (ts) => this.frame(ts),
    resized: () => {
      this.layout = null;
      this.dirty = true;
    },
    bindInput: (canvas) => this.bindInput(canvas),
  });
  private conn: FeedConnection | null = null;

  constructor(readonly capacity = 200_000) {
    this.store = new EventStore({ capacity });
  }

  private readonly panels = new PanelNotifier();
  subscribe = this.panels.subscribe;
  getTick = this.panels.getTick;
  private notify(): void {
    this.panels.notify();
  }
  private changed(): void {
    this.dirty = true;
    this.notify();
  }

  // ---- ingestion ----
  private reset(): void {
    this.store = new EventStore({ capacity: this.capacity });
    this.selection.clear();
    this.origin = null;
    this.held = [];
    this.feed.received = zeroCounts();
  }

  ingest(events: readonly TraceEvent[]): void {
    if (!events.length) return;
    for (const e of events) this.feed.received[e.type]++;
    if (this.paused) {
      for (const e of events) this.held.push(e);
      if (this.held.length > this.capacity) {
        this.heldDropped += this.held.length - this.capacity;
        this.held.splice(0, this.held.length - this.capacity);
      }
      this.notify();
      return;
    }
    this.apply(events);
  }

  private apply(events: readonly TraceEvent[]): void {
    this.store.addMany(events);
    this.selection.eventsArrived();
    if (this.feed.serverNow() !== null && Number.isFinite(this.store.latestT)) this.feed.observeClock(this.store.latestT);
    if (this.origin === null && Number.isFinite(this.store.earliestT)) this.origin = this.store.earliestT;
    this.feed.applied(events.length);
    this.changed();
  }

  private handlers(): FeedHandlers {
    return this.feed.handlers({
      onSnapshot: (events, now) => {
        // A snapshot is the server's truth: start over (also right after a server restart, whose clock restarts).
        this.reset();
        this.feed.snapshots++;
        this.feed.setClock(now);
        this.ingest(events);
        if (!events.length) this.origin = now;
        this.follow = true;
        this.changed();
      },
      onEvents: (events) => this.ingest(events),
    });
  }

  private stopFeed(): void {
    this.conn?.close();
    this.conn = null;
    this.feed.stopped();
  }

  /** A token was given or forgotten: connect again with it. */
  tokenChanged(): void {
    this.feed.tokenRefused = false;
    if (this.source.kind === 'live') this.startLive();
    else this.changed();
  }

  startLive(): void {
    this.stopFeed();
    this.reset();
    this.source = { kind: 'live' };
    this.follow = true;
    this.conn = connectFeed(this.handlers());
    this.changed();
  }

  startDemo(rate = 2000): void {
    this.stopFeed();
    this.reset();
    this.source = { kind: 'demo', rate };
    this.follow = true;
    this.conn = startDemoFeed(this.handlers(), { rate });
    this.changed();
  }

  loadText(text: string, name: string): void {
    this.stopFeed();
    this.reset();
    const parsed = openTraceFile(text, name);
    this.notice = '';
    this.source = parsed.source;
    // A file that could not be read at all gets one sentence (the file banner), not an invalid-event count too.
    this.feed.invalid = parsed.source.error ? 0 : parsed.source.invalid;
    this.feed.invalidMessage = parsed.source.error ? '' : (parsed.source.firstError ?? '');
    this.paused = false;
    this.follow = false;
    this.ingest(parsed.events);
    if (!parsed.events.length) this.view = { t0: 0, t1: 3000 };
    this.fitAll();
    this.changed(); // also when nothing was read: the status and the banner must say so
  }

  async loadUrl(url: string): Promise<void> {
    this.feed.connection = 'connecting';
    this.feed.connectionDetail = `fetching ${url}`;
    this.changed();
    try {
      this.loadText(await fetchTraceText(url), url.split('/').pop() || url);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      this.source = { kind: 'file', name: url, invalid: 0, error: `It could not be fetched (${why}).` };
      this.feed.connection = 'error';
      this.feed.connectionDetail = String(err);
      this.changed();
    }
  }

  // ---- view ----
  liveNow(): number | null {
    return this.feed.serverNow();
  }

  /** The time window and the plot's pixel span it is drawn on. */
  viewport(): Viewport {
    const l = this.layout;
    return { t0: this.view.t0, t1: this.view.t1, x0: l?.plotX0 ?? 0, width: l?.plotWidth ?? 1 };
  }

  private setViewport(v: Viewport): void {
    this.view = { t0: v.t0, t1: v.t1 };
    this.changed();
  }

  setView(t0: number, t1: number): void {
    this.follow = false;
    this.view = { t0, t1 };
    this.changed();
  }

  fitAll(): void {
    const s = this.store;
    if (!Number.isFinite(s.earliestT)) return;
    this.follow = false;
    const t0 = Math.max(s.earliestT, s.oldestRetainedT() === Infinity ? s.earliestT : s.oldestRetainedT());
    this.setViewport(fit(this.viewport(), t0, s.latestT));
  }

  zoom(factor: number, x?: number): void {
    this.panels.gesture();
    const v = this.viewport();
    if (this.follow) this.setViewport(endAt(zoomAt(v, v.x0 + v.width, factor), v.t1));
    else this.setViewport(zoomAt(v, x ?? v.x0 + v.width / 2, factor));
  }

  pan(dx: number): void {
    this.panels.gesture();
    this.follow = false;
    this.setViewport(panBy(this.viewport(), dx));
  }

  setFollow(on: boolean): void {
    this.follow = on && this.feed.serverNow() !== null;
    if (on && this.paused) this.setPaused(false);
    this.changed();
  }

  setPaused(on: boolean): void {
    this.paused = on;
    if (on) this.follow = false;
    if (!on && this.held.length) {
      const held = this.held;
      this.held = [];
      this.apply(held);
    }
    this.changed();
  }

  get heldCount(): number {
    return this.held.length;
  }

  // ---- selection (timelineSelection.ts) ----
  /** Selects the request now if it is known, else as soon as its events arrive. */
  selectWhenSeen = (id: string): void => this.selection.selectWhenSeen(id);
  selectRequest = (id: string | null): boolean => this.selection.selectRequest(id);
  /** Click at canvas CSS pixel (x, y): selects the batch there and one of its requests (keeps the current one if it is in it). */
  selectAt = (x: number, y: number): boolean => this.selection.selectAt(this.layout, this.viewport(), x, y);
  selectBatchRequest = (req: number): void => this.selection.selectBatchRequest(req);
  setRange = (a: number | null, b?: number): void => this.selection.setRange(a, b);
  /** Stats over the selected range, or over the visible window when none is selected. */
  stats = (): RangeStats => this.selection.stats(this.view);

  // ---- export ----
  exportEvents(scope: 'view' | 'all' = 'view'): TraceEvent[] {
    return scope === 'all' ? toEvents(this.store) : toEvents(this.store, this.view.t0, this.view.t1);
  }

  exportChrome(scope: 'view' | 'all' = 'view'): ChromeTrace {
    return toChromeTrace(this.exportEvents(scope));
  }

  /** A transient message for the person (e.g. "nothing to export"); cleared on the next load or after a while. */
  notice = '';
  private noticeTimer: ReturnType<typeof setTimeout> | null = null;
  private say(text: string): void {
    this.notice = text;
    if (this.noticeTimer) clearTimeout(this.noticeTimer);
    this.noticeTimer = setTimeout(() => {
      this.notice = '';
      this.noticeTimer = null;
      this.changed();
    }, 8000);
    this.changed();
  }

  /** Saves a Chrome trace (which this page also opens); says so instead of saving an empty file. Returns whether it saved. */
  download(scope: 'view' | 'all'): boolean {
    const file = exportTraceFile(this.exportEvents(scope), scope, this.store.size);
    if ('nothing' in file) {
      this.say(file.nothing);
      return false;
    }
    this.notice = '';
    saveJsonFile(file.json, `tokenrouter-trace-${scope}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    this.changed();
    return true;
  }

  // ---- canvas ----
  attach(canvas: HTMLCanvasElement): void {
    this.canvas.attach(canvas);
  }

  detach(): void {
    this.canvas.detach();
    this.stopFeed();
  }

  private frame(ts: number): void {
    if (this.lastTs) this.frames.frame(ts - this.lastTs);
    this.lastTs = ts;
    const now = this.liveNow();
    if (this.follow && now !== null) {
      const span = this.view.t1 - this.view.t0;
      const end = now + span * 0.02;
      if (end !== this.view.t1) {
        this.view = { t0: end - span, t1: end };
        this.dirty = true;
      }
    }
    const { ctx, cssW, cssH } = this.canvas;
    if (!ctx) return;
    if (!this.dirty && this.drawnVersion === this.store.version) return;
    const t0 = performance.now();
    // by name, not count: a file opened over the live feed may hold the same models in another order
    if (!this.layout || !layoutFits(this.layout, this.store.lanes)) {
      this.layout = computeLayout(this.store.lanes, cssW, cssH);
    }
    this.selection.refreshPath();
    this.lastDraw = drawTimeline(ctx, this.store, this.layout, this.viewport(), {
      path: this.selected?.path ?? null,
      selectedBatch: this.selectedBatch,
      range: this.range,
      hover: this.hover,
      liveNow: this.source.kind === 'file' ? null : now,
      origin: this.origin ?? 0,
      gauges: this.feed.gauges,
    });
    this.frames.draw(performance.now() - t0);
    this.dirty = false;
    this.drawnVersion = this.store.version;
  }

  private bindInput(canvas: HTMLCanvasElement): () => void {
    return bindCanvasInput(canvas, {
      layout: () => this.layout,
      viewport: () => this.viewport(),
      drag: (from, dx) => {
        this.panels.gesture();
        this.follow = false;
        this.setViewport(panBy(from, dx));
      },
      dragRange: (a, b) => {
        this.panels.gesture();
        this.setRange(a, b);
      },
      hover: (h) => {
        const had = this.hover !== null;
        this.hover = h && this.layout ? { ...h, batch: hitBatch(this.store, this.layout, this.viewport(), h.x, h.y) } : null;
        if (this.hover && this.hover.batch < 0) this.hover = null;
        if (had || this.hover) this.dirty = true;
      },
      click: (x, y) => this.selectAt(x, y),
      clearRange: () => this.setRange(null),
      pan: (dx) => this.pan(dx),
      zoom: (f, x) => this.zoom(f, x),
      escape: () => this.selection.drop(),
    });
  }
}

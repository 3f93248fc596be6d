// The live check of a prediction: a deployed algorithm's measured tok/s and hand-off rate over a window, beside what its evaluation predicts at the concurrency it runs at.
import { PREDICTION_TOLERANCE, type PredictionCheck } from '../../shared/api/evaluate.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { TokenRouterError } from '../errors.ts';
import type { TokenRouterService } from '../http/tokenRouterService.ts';
import { entryProfileOf } from './entryProfile.ts';
import { likeWithLike, modeOf } from './likeWithLike.ts';
import type { EvaluationRuns } from './evaluateDraft.ts';
import { specKey } from './specKey.ts';
import { predictServing } from './predictServing.ts';
import type { BatchTiming } from './routingCounts.ts';

/** Watching stops when nobody asked for this long, and so does the entry's measurement a check keeps on. */
const IDLE_STOP_MS = 120_000;
export const MAX_WINDOW_MS = 300_000;

interface Ended {
  t: number;
  tokens: number;
  handoffs: number;
  maxTokens: number;
}

/** One algorithm's requests as the trace shows them, from the moment someone first asked. */
class Watch {
  readonly since: number;
  /** The algorithm's requests in flight, with their max_tokens. */
  private readonly ids = new Map<string, number>();
  ended: Ended[] = [];
  batches: BatchTiming[] = [];
  /** Per batch of `batches`: its rows of the algorithm's requests and of other traffic's. */
  rows: { own: number; other: number }[] = [];
  /** ∫ requests in flight dt and ∫ [any in flight] dt from `since`, at each change: the mean concurrency and the busy time. */
  private area: { t: number; active: number; integral: number; busy: number }[] = [];
  private active = 0;
  private last: number;

  constructor(
    private readonly service: TokenRouterService,
    readonly name: string,
    now: number,
  ) {
    this.since = now;
    this.last = now;
    this.area.push({ t: now, active: 0, integral: 0, busy: 0 });
  }

  private move(t: number, delta: number): void {
    const prev = this.area[this.area.length - 1];
    this.area.push({
      t,
      active: this.active + delta,
      integral: prev.integral + this.active * (t - this.last),
      busy: prev.busy + (this.active > 0 ? t - this.last : 0),
    });
    this.active += delta;
    this.last = t;
  }

  readonly onEvent = (e: TraceEvent): void => {
    if (e.type === 'batch') {
      this.batches.push({ model: e.model, size: e.requestIds.length, start: e.start, end: e.end });
      const own = e.requestIds.filter((id) => this.ids.has(id)).length;
      this.rows.push({ own, other: e.requestIds.length - own });
    } else if (e.type === 'request-state' && e.model === null && e.state === 'admitted') {
      // the trace does not say which algorithm a request runs; the cluster's request does, while it is in flight
      for (const r of this.service.cluster.activeRequests()) {
        if (r.id === e.requestId && r.spec.ref?.key.startsWith(`${this.name}@`)) {
          this.ids.set(e.requestId, r.spec.maxLength - r.spec.promptLength);
          this.move(e.t, 1);
        }
      }
    } else if (e.type === 'request-end' && this.ids.has(e.requestId)) {
      const maxTokens = this.ids.get(e.requestId)!;
      this.ids.delete(e.requestId);
      this.move(e.t, -1);
      this.ended.push({ t: e.t, tokens: e.tokens.length, handoffs: e.handoffs, maxTokens });
    }
  };

  trim(from: number): void {
    this.ended = this.ended.filter((x) => x.t >= from);
    const keep = this.batches.map((b) => b.end >= from);
    this.batches = this.batches.filter((_, k) => keep[k]);
    this.rows = this.rows.filter((_, k) => keep[k]);
    while (this.area.length > 2 && this.area[1].t < from) this.area.shift();
  }

  /**
   * Over [from, now]: the time some request of the algorithm was in flight, and the mean in flight
   * during it. Idle stretches are left out of both: the model predicts a server with N in flight,
   * and a pause in traffic is not a slower algorithm.
   */
  busy(from: number, now: number): { ms: number; meanActive: number } {
    const at = (t: number) => {
      let k = 0;
      while (k + 1 < this.area.length && this.area[k + 1].t <= t) k++;
      const p = this.area[k];
      return { integral: p.integral + p.active * (t - p.t), busy: p.busy + (p.active > 0 ? t - p.t : 0) };
    };
    const a = at(from);
    const b = at(now);
    const ms = b.busy - a.busy;
    return { ms, meanActive: ms > 0 ? (b.integral - a.integral) / ms : 0 };
  }

  /** Over [from, now]: ms spent at each count of the algorithm's requests in flight. */
  timeAtActive(from: number, now: number): Map<number, number> {
    const out = new Map<number, number>();
    for (let k = 0; k < this.area.length; k++) {
      const t0 = Math.max(from, this.area[k].t);
      const t1 = Math.min(now, k + 1 < this.area.length ? this.area[k + 1].t : now);
      if (t1 > t0) out.set(this.area[k].active, (out.get(this.area[k].active) ?? 0) + t1 - t0);
    }
    return out;
  }
}

export class PredictionChecks {
  private readonly watches = new Map<string, { watch: Watch; stop: () => void; askedAt: number }>();

  constructor(
    private readonly service: TokenRouterService,
    private readonly runs: EvaluationRuns,
  ) {}

  check(name: string, windowMs: number): PredictionCheck {
    const s = this.service;
    const active = s.registry.active(name);
    if (!active) throw new TokenRouterError('not_found', `no deployed algorithm named ${name}`, 'algorithm');
    const now = s.cluster.clock.now();
    this.stopIdle(now);
    let w = this.watches.get(name);
    if (!w) {
      const watch = new Watch(s, name, now);
      w = { watch, stop: s.trace.subscribe(watch.onEvent), askedAt: now };
      this.watches.set(name, w);
    }
    w.askedAt = now;
    entryProfileOf(s).measureFor(IDLE_STOP_MS);
    const from = Math.max(w.watch.since, now - windowMs);
    w.watch.trim(Math.max(w.watch.since, now - MAX_WINDOW_MS));
    const ended = w.watch.ended.filter((x) => x.t >= from);
    const span = Math.max(1, now - from);
    const busy = w.watch.busy(from, now);
    const tokens = ended.reduce((a, x) => a + x.tokens, 0);
    const handoffs = ended.reduce((a, x) => a + x.handoffs, 0);
    const measured = { tokS: busy.ms > 0 ? (tokens / busy.ms) * 1000 : 0, handoffsPerToken: tokens ? handoffs / tokens : 0 };
    const meanActive = busy.meanActive;
    const evaluated = this.runs.latestFor(specKey(active.spec));
    let predicted: PredictionCheck['predicted'] = null;
    let failure: string | null = null;
    const concurrency = Math.max(1, Math.round(meanActive));
    if (evaluated && ended.length > 0) {
      const { result } = evaluated;
      const c = s.cluster;
      try {
        const p = predictServing({
          routing: result.routing,
          meanOutputTokens: result.meanOutputTokens,
          concurrency,
          lanes: c.engines.map((l) => ({ name: l.name, maxBatch: l.maxBatch, threshold: l.threshold })),
          maxWaitMs: c.maxWaitMs,
          batches: [...evaluated.batches, ...w.watch.batches.filter((b) => b.end >= from)],
          // the concurrency measured is in the cluster: the crossings between threads are part of it
          transitMs: evaluated.transitMs,
        });
        const setting = p.current ?? p.best;
        predicted = {
          tokS: setting.tokS,
          tokSBand: setting.tokSBand,
          handoffsPerToken: result.meanOutputTokens ? result.handoffsPerRequest / result.meanOutputTokens : 0,
        };
      } catch (e) {
        predicted = null; // e.g. a model of the evaluation is gone: nothing to compare with, and the reason said
        failure = `nothing predicted: ${e instanceof Error ? e.message : String(e)}`;
      }
    }
    let compared: PredictionCheck['compared'] = null;
    let notComparable: string[] = failure ? [failure] : [];
    if (evaluated && predicted) {
      const inWindow = w.watch.batches.map((b) => b.end >= from);
      const rows = w.watch.rows.filter((_, k) => inWindow[k]);
      const ownRows = rows.reduce((a, r) => a + r.own, 0);
      const otherRows = rows.reduce((a, r) => a + r.other, 0);
      const tokensPerRequest = ended.length ? tokens / ended.length : 0;
      const r = evaluated.result;
      const like = likeWithLike({
        requests: ended.length,
        busyMs: busy.ms,
        timeAtActive: w.watch.timeAtActive(from, now),
        concurrency,
        tokensPerRequest,
        evaluatedTokensPerRequest: r.meanOutputTokens,
        ownRows,
        otherRows,
      });
      notComparable = like.reasons;
      compared = {
        concurrency,
        tokensPerRequest,
        evaluatedTokensPerRequest: r.meanOutputTokens,
        maxTokens: modeOf(ended.map((x) => x.maxTokens)),
        evaluatedMaxTokens: r.maxTokens,
        evaluatedConcurrency: r.concurrency,
        otherShare: ownRows + otherRows > 0 ? otherRows / (ownRows + otherRows) : 0,
      };
    }
    const comparable = predicted !== null && notComparable.length === 0;
    const diff = (p: number, m: number) => (m > 0 ? Math.abs(p - m) / m : p > 0 ? Infinity : 0);
    // unlike traffic gets no percentage: it would say the model is off when the traffic is
    const tokSDiff = predicted && comparable ? diff(predicted.tokS, measured.tokS) : null;
    const handoffDiff = predicted && comparable ? diff(predicted.handoffsPerToken, measured.handoffsPerToken) : null;
    return {
      algorithm: name,
      version: active.version,
      evaluated: evaluated !== undefined,
      windowMs: span,
      requests: ended.length,
      busyMs: busy.ms,
      meanActive,
      measured,
      predicted,
      compared,
      comparable,
      notComparable,
      inBand: predicted && comparable ? measured.tokS >= predicted.tokSBand.low && measured.tokS <= predicted.tokSBand.high : null,
      tokSDiff: tokSDiff !== null && Number.isFinite(tokSDiff) ? tokSDiff : null,
      handoffDiff: handoffDiff !== null && Number.isFinite(handoffDiff) ? handoffDiff : null,
      flagged: (tokSDiff ?? 0) > PREDICTION_TOLERANCE || (handoffDiff ?? 0) > PREDICTION_TOLERANCE,
    };
  }

  private stopIdle(now: number): void {
    for (const [name, w] of this.watches) {
      if (now - w.askedAt > IDLE_STOP_MS) {
        w.stop();
        this.watches.delete(name);
      }
    }
  }

  close(): void {
    for (const w of this.watches.values()) w.stop();
    this.watches.clear();
  }
}

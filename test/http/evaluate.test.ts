// POST /admin/evaluate against a real listening server: the NDJSON run and its statistics, every bound (size, concurrency, tokens, one run per client, runs per server), cancel (by DELETE and by hanging up), bad drafts, and the prediction made from a run.
import { afterEach, describe, expect, it } from 'vitest';
import { evaluateBoundsSchema, evaluateEventSchema, predictionSchema, type EvaluateEvent } from '../../shared/api/evaluate.ts';
import { LIVE_SHARE } from '../../runtime/eval/evaluateDraft.ts';
import { rStitchIr } from '../reliability/irFixtures.ts';
import { startTestServer, until, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

type ErrorJson = { error: { message: string; code: string; param: string | null; details?: { nodeId?: string; code: string }[] } };

const post = (url: string, body: unknown, signal?: AbortSignal) =>
  fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal });

/** Reads an NDJSON answer line by line, checking every line against the schema. */
async function* events(res: Response): AsyncGenerator<EvaluateEvent> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line) yield evaluateEventSchema.parse(JSON.parse(line));
    }
  }
  expect(buf).toBe('');
}

async function all(res: Response): Promise<EvaluateEvent[]> {
  const out: EvaluateEvent[] = [];
  for await (const e of events(res)) out.push(e);
  return out;
}

async function refused(res: Response, status: number): Promise<ErrorJson['error']> {
  expect(res.status).toBe(status);
  return ((await res.json()) as ErrorJson).error;
}

describe('evaluating a draft', () => {
  it('streams started, one progress line per problem and the result with the routing statistics', async () => {
    t = await startTestServer();
    const res = await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), problems: 12, concurrency: 3, maxTokens: 24 });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/x-ndjson/);
    const ev = await all(res);
    expect(ev[0]).toMatchObject({ type: 'started', problems: 12, concurrency: 3, maxTokens: 24, models: ['small', 'large'] });
    const progress = ev.filter((e) => e.type === 'progress');
    expect(progress.map((p) => p.done)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    const last = ev[ev.length - 1];
    if (last.type !== 'result') throw new Error(`ended with ${JSON.stringify(last)}`);
    const r = last.result;
    expect(r).toMatchObject({ label: 'draft', problems: 12, concurrency: 3, maxTokens: 24, failed: 0 });
    expect(r.irKey).toMatch(/^[0-9a-f]{32}$/);
    // the simulated runners never emit EOS: every answer runs to max tokens
    expect(r.meanOutputTokens).toBe(24);
    expect(Object.values(r.tokenShare).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
    // R-Stitch on entropies around its τ switches: both models wrote, and the routing rows are distributions
    expect(r.tokenShare.large).toBeGreaterThan(0);
    expect(r.handoffsPerRequest).toBeGreaterThan(0);
    expect(r.routing.models).toEqual(['small', 'large']);
    for (const row of r.routing.P) expect(row.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
    expect(r.routing.P[0][1]).toBeGreaterThan(0);
    expect(r.routing.steps.every((s) => s > 0)).toBe(true);
    // nothing of the run is left in the cluster
    expect(t.service.cluster.activeCount).toBe(0);
  });

  it('defaults to 100 problems, and a served name or a built-in runs the same way', async () => {
    t = await startTestServer({ latency: { small: 0, large: 0 } });
    const def = await all(await post(`${t.url}/admin/evaluate`, { model: 'r-stitch', maxTokens: 4 }));
    expect(def[0]).toMatchObject({ type: 'started', problems: 100 });
    expect(def.at(-1)).toMatchObject({ type: 'result', result: { label: 'r-stitch', problems: 100 } });
    const built = await all(await post(`${t.url}/admin/evaluate`, { builtin: 'r-stitch', params: { tau: 0.05 }, problems: 3, maxTokens: 4 }));
    expect(built.at(-1)).toMatchObject({ type: 'result', result: { label: 'r-stitch', problems: 3, irKey: null } });
  });
});

describe('the bounds of a run', () => {
  it('refuses more problems than the set holds, and zero, naming the field', async () => {
    t = await startTestServer();
    const big = await refused(await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), problems: 1001 }), 400);
    expect(big).toMatchObject({ code: 'invalid_request', param: 'problems' });
    expect(big.message).toMatch(/has 1000 problems; ask for at most 1000/);
    // what the panel bounds its field by: the same set's size, and this server's most in flight
    expect(evaluateBoundsSchema.parse(await (await fetch(`${t.url}/admin/evaluate/bounds`)).json())).toEqual({
      task: 'word-problems',
      tasks: [
        { name: 'word-problems', description: expect.any(String), grader: 'final-number' },
        { name: 'multiplication', description: expect.any(String), grader: 'regex' },
      ],
      problems: 1000,
      defaultProblems: 100,
      concurrency: Math.min(8, Math.floor(t.service.cluster.maxConcurrency / 2)),
    });
    expect(await refused(await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), problems: 0 }), 400)).toMatchObject({ param: 'problems' });
    expect(await refused(await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), maxTokens: 257 }), 400)).toMatchObject({ param: 'maxTokens' });
    expect(await refused(await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), speed: 'fast' }), 400)).toMatchObject({
      message: expect.stringMatching(/unsupported parameter|speed/),
    });
  });

  it("refuses a concurrency past the bound and past half the server's concurrency", async () => {
    t = await startTestServer({ config: { limits: { maxConcurrency: 6 } } });
    expect(await refused(await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), concurrency: 9 }), 400)).toMatchObject({ param: 'concurrency' });
    expect(evaluateBoundsSchema.parse(await (await fetch(`${t.url}/admin/evaluate/bounds`)).json()).concurrency).toBe(3);
    const half = await refused(await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), concurrency: 4 }), 400);
    expect(half).toMatchObject({ code: 'invalid_request', param: 'concurrency' });
    expect(half.message).toMatch(/at most 3 requests at once/);
    // and a run holds no more than its concurrency in flight
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, t!.service.cluster.activeCount)), 1);
    const ev = await all(await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), concurrency: 3, problems: 9, maxTokens: 16 }));
    clearInterval(sampler);
    expect(ev.at(-1)!.type).toBe('result');
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(3);
  });

  it('beside live traffic a run holds LIVE_SHARE of the request-time in flight (at most two slots beside 8), and still finishes', async () => {
    t = await startTestServer({ latency: { small: 2, large: 5 } });
    const s = t;
    let stop = false;
    const client = async () => {
      while (!stop) {
        const res = await post(`${s.url}/v1/chat/completions`, { model: 'r-stitch', messages: [{ role: 'user', content: '12*34' }], max_tokens: 48 });
        await res.json();
      }
    };
    const live = Array.from({ length: 8 }, client);
    await until(() => s.service.cluster.activeCount >= 8);
    let most = 0;
    let mine = 0;
    let all_ = 0;
    const sampler = setInterval(() => {
      const active = [...s.service.cluster.activeRequests()];
      const ev = active.filter((r) => r.id.startsWith('ev')).length;
      most = Math.max(most, ev);
      mine += ev;
      all_ += active.length;
    }, 1);
    const ev = await all(await post(`${s.url}/admin/evaluate`, { ir: rStitchIr(), problems: 8, concurrency: 8, maxTokens: 16 }));
    clearInterval(sampler);
    stop = true;
    await Promise.all(live);
    expect(ev.at(-1)!.type).toBe('result');
    // 8 live requests: 0.15 of all in flight is 1.41, two slots each busy 71 % of the time (a whole second slot would be 2 of 10)
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
    expect(mine / all_).toBeLessThan(LIVE_SHARE + 0.03);
  });

  it('runs one evaluation per client and at most two on the server', async () => {
    t = await startTestServer({ latency: { small: 20, large: 40 } });
    const abort = new AbortController();
    const long = { ir: rStitchIr(), problems: 200, maxTokens: 64, concurrency: 1 };
    const first = await post(`${t.url}/admin/evaluate`, { ...long, client: 'tab-a' }, abort.signal);
    expect(first.status).toBe(200);
    const same = await refused(await post(`${t.url}/admin/evaluate`, { ...long, client: 'tab-a' }), 409);
    expect(same).toMatchObject({ code: 'conflict', param: 'client' });
    expect(same.message).toMatch(/already has evaluation ev\w+ running/);
    const second = await post(`${t.url}/admin/evaluate`, { ...long, client: 'tab-b' }, abort.signal);
    expect(second.status).toBe(200);
    const third = await post(`${t.url}/admin/evaluate`, { ...long, client: 'tab-c' });
    expect(await refused(third, 429)).toMatchObject({ code: 'overloaded' });
    expect(third.headers.get('retry-after')).toBe('5');
    abort.abort();
    // hanging up cancels both: their requests leave the cluster and a new run may start
    await until(() => t!.service.cluster.activeCount === 0, 5000);
    const again = await post(`${t.url}/admin/evaluate`, { ...long, problems: 1, maxTokens: 2, client: 'tab-a' });
    expect((await all(again)).at(-1)!.type).toBe('result');
  });

  it('a caller without a client id is its address', async () => {
    t = await startTestServer({ latency: { small: 20, large: 40 } });
    const abort = new AbortController();
    const long = { ir: rStitchIr(), problems: 200, maxTokens: 64, concurrency: 1 };
    expect((await post(`${t.url}/admin/evaluate`, long, abort.signal)).status).toBe(200);
    expect(await refused(await post(`${t.url}/admin/evaluate`, long), 409)).toMatchObject({
      message: expect.stringMatching(/client "(::ffff:)?127\.0\.0\.1"/),
    });
    abort.abort();
  });
});

describe('cancelling a run', () => {
  it('DELETE ends the stream with a cancelled line and frees every request of the run', async () => {
    t = await startTestServer({ latency: { small: 10, large: 20 } });
    const res = await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), problems: 100, concurrency: 4, maxTokens: 64 });
    const seen: EvaluateEvent[] = [];
    let runId = '';
    for await (const e of events(res)) {
      seen.push(e);
      if (e.type === 'started') runId = e.runId;
      if (e.type === 'progress' && e.done === 2) {
        const del = await fetch(`${t.url}/admin/evaluate/${runId}`, { method: 'DELETE' });
        expect(await del.json()).toEqual({ runId, cancelled: true });
      }
    }
    const last = seen.at(-1)!;
    expect(last).toMatchObject({ type: 'cancelled', total: 100 });
    expect((last as { done: number }).done).toBeLessThan(100);
    expect(seen.some((e) => e.type === 'result')).toBe(false);
    await until(() => t!.service.cluster.activeCount === 0, 2000);
    // a second cancel finds nothing running; an unknown run is 404
    expect((await fetch(`${t.url}/admin/evaluate/${runId}`, { method: 'DELETE' })).status).toBe(404);
    expect((await fetch(`${t.url}/admin/evaluate/nope`, { method: 'DELETE' })).status).toBe(404);
  });
});

describe('drafts that cannot be evaluated', () => {
  it('a compile error is 400 naming the node', async () => {
    t = await startTestServer();
    const ir = rStitchIr() as unknown as { nodes: { id: string; type: string; params: Record<string, unknown> }[] };
    const tau = ir.nodes.find((n) => n.type === 'constant')!;
    tau.params.value = 'high';
    const e = await refused(await post(`${t.url}/admin/evaluate`, { ir }), 400);
    expect(e.code).toBe('invalid_ir');
    expect(e.message).toContain(tau.id);
    expect(e.details!.some((d) => d.nodeId === tau.id)).toBe(true);
    expect(t.service.cluster.activeCount).toBe(0);
  });

  it('a model the server does not serve is named', async () => {
    t = await startTestServer({ config: { models: [{ name: 'small' }, { name: 'large' }] } });
    const ir = rStitchIr() as unknown as { nodes: { id: string; params: Record<string, unknown> }[] };
    const start = ir.nodes.find((n) => n.id === 'start')!;
    start.params.model = 'medium';
    const e = await refused(await post(`${t.url}/admin/evaluate`, { ir }), 400);
    expect(e.message).toMatch(/medium/);
    const me = await refused(await post(`${t.url}/admin/evaluate`, { builtin: 'me' }), 400);
    expect(me.message).toMatch(/runs on model "medium", which this server does not serve/);
    expect(await refused(await post(`${t.url}/admin/evaluate`, { model: 'nope' }), 404)).toMatchObject({ code: 'model_not_found' });
  });
});

describe('predicting the serving cost of a run', () => {
  it('gives tok/s, p99 TPOT and thresholds at a concurrency, goodput with an SLO; refuses an unknown run and a bad concurrency', async () => {
    t = await startTestServer({ latency: { small: 2, large: 6 } });
    const ev = await all(await post(`${t.url}/admin/evaluate`, { ir: rStitchIr(), problems: 16, concurrency: 4, maxTokens: 32 }));
    const result = ev.at(-1)!;
    if (result.type !== 'result') throw new Error('no result');
    const { runId } = result.result;
    const res = await post(`${t.url}/admin/evaluate/${runId}/predict`, { concurrency: 8, slo: { tpotMs: 50 } });
    expect(res.status).toBe(200);
    const p = predictionSchema.parse(await res.json());
    expect(p).toMatchObject({ runId, concurrency: 8 });
    expect(Object.keys(p.best.thresholds)).toEqual(['small', 'large']);
    expect(Object.values(p.best.thresholds).reduce((s, x) => s + x - 1, 0)).toBeLessThan(8);
    // every token costs at least a small step (2 ms) shared by at most 8 rows: under 4000 tok/s
    expect(p.best.tokS).toBeGreaterThan(0);
    expect(p.best.tokS).toBeLessThan(4000);
    expect(p.current!.tokS).toBeLessThanOrEqual(p.best.tokS * 1.0001);
    // the band from the step latencies' quartiles holds the figure and has a width (steps of a run are never all alike)
    for (const s of [p.best, p.current!]) {
      expect(s.tokSBand.low).toBeLessThanOrEqual(s.tokS);
      expect(s.tokSBand.high).toBeGreaterThanOrEqual(s.tokS);
      expect(s.tokSBand.high).toBeGreaterThan(s.tokSBand.low);
    }
    expect(p.best.p99TpotMs).toBeGreaterThanOrEqual(2);
    expect(p.best.goodputRps).toBeGreaterThan(0);
    // at the run's own concurrency and thresholds, the model (step latency launch to launch, no factor from the run) lands near what the run measured
    const own = predictionSchema.parse(await (await post(`${t.url}/admin/evaluate/${runId}/predict`, { concurrency: 4 })).json());
    expect(own.current!.tokS / result.result.tokS).toBeGreaterThan(0.5);
    expect(own.current!.tokS / result.result.tokS).toBeLessThan(2);
    expect(result.result.tokS).toBeCloseTo((result.result.meanOutputTokens * 16) / (result.result.durationMs / 1000), 6);
    expect(result.result.meanInFlight).toBeGreaterThan(1);
    expect(result.result.meanInFlight).toBeLessThanOrEqual(4);
    expect(p.latencyBatches.small).toBeGreaterThan(0);
    expect(p.latencyBatches.large).toBeGreaterThan(0);
    // nothing but the evaluation has run: no model's step latency has seen live traffic
    expect(p.liveBatches).toEqual({ small: 0, large: 0 });
    // no HTTP traffic yet: no entry cost measured; the run's own requests spent time on no model (the entry to an engine, hand-offs, the end), which keeps a little of the 8 off the models
    expect(p.entryMs).toBeNull();
    expect(p.transitMs).toBeGreaterThan(0);
    expect(p.current!.inEngine).toBeLessThan(8);
    expect(p.current!.inEngine).toBeGreaterThan(7);
    // live HTTP requests within 30 s of the run's end (the entry is measured then) give the entry's time per request, which keeps clients out of the engine
    const stopReading = t.service.trace.subscribe(() => {});
    for (let i = 0; i < 6; i++) {
      const sent = performance.now();
      const r = await post(`${t.url}/v1/chat/completions`, { model: 'r-stitch', messages: [{ role: 'user', content: `q ${i}` }], max_tokens: 8 });
      const wall = performance.now() - sent;
      expect(r.status).toBe(200);
      // its time at the server, which the client's own wall time holds with the network and the client beside it
      const atServer = Number(/^total;dur=([\d.]+)$/.exec(r.headers.get('server-timing') ?? '')?.[1]);
      expect(atServer).toBeGreaterThan(0);
      expect(atServer).toBeLessThan(wall);
    }
    const withEntry = predictionSchema.parse(await (await post(`${t.url}/admin/evaluate/${runId}/predict`, { concurrency: 8 })).json());
    expect(withEntry.entryMs).toBeGreaterThan(0);
    expect(withEntry.transitMs).toBe(p.transitMs);
    // r-stitch starts every request on small, so the live requests' batches count there
    expect(withEntry.liveBatches.small).toBeGreaterThan(0);
    expect(withEntry.latencyBatches.small).toBeGreaterThan(p.latencyBatches.small);
    expect(withEntry.current!.inEngine).toBeLessThan(p.current!.inEngine);
    expect(withEntry.current!.inEngine).toBeGreaterThan(0);
    expect(withEntry.clientMs).toBe(0);
    // clients with time of their own (network, turnaround) keep more of the 8 off the models: fewer there, fewer tok/s
    const slowClients = predictionSchema.parse(await (await post(`${t.url}/admin/evaluate/${runId}/predict`, { concurrency: 8, clientMs: 40 })).json());
    expect(slowClients.clientMs).toBe(40);
    expect(slowClients.current!.inEngine).toBeLessThan(withEntry.current!.inEngine - 0.5);
    expect(slowClients.current!.tokS).toBeLessThan(withEntry.current!.tokS);
    stopReading();
    expect(await refused(await post(`${t.url}/admin/evaluate/${runId}/predict`, { concurrency: 8, clientMs: -1 }), 400)).toMatchObject({ param: 'clientMs' });
    expect(await refused(await post(`${t.url}/admin/evaluate/${runId}/predict`, { concurrency: 0 }), 400)).toMatchObject({ param: 'concurrency' });
    expect(await refused(await post(`${t.url}/admin/evaluate/nope/predict`, { concurrency: 4 }), 404)).toMatchObject({ param: 'runId' });
  });
});

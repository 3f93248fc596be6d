// GET /admin/prediction-check against a real listening server: a deployed draft's measured tok/s and hand-off rate beside what its evaluation predicts, and the refusals.
import { afterEach, describe, expect, it } from 'vitest';
import { PREDICTION_TOLERANCE, predictionCheckSchema, type EvaluateEvent } from '../../shared/api/evaluate.ts';
import { rStitchIr } from '../reliability/irFixtures.ts';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const check = async (s: TestServer, name: string, windowMs = 30_000) => {
  const res = await fetch(`${s.url}/admin/prediction-check?algorithm=${name}&windowMs=${windowMs}`);
  return { status: res.status, json: (await res.json()) as unknown };
};

/** A closed loop of `c` clients sending chat requests to `model` for `ms`. */
async function traffic(s: TestServer, model: string, c: number, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let sent = 0;
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (Date.now() < until) {
        sent++;
        const res = await post(`${s.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: '12*34' }], max_tokens: 32, temperature: 0 });
        expect(res.status).toBe(200);
        await res.json();
      }
    }),
  );
  return sent;
}

describe('the live check of a prediction', () => {
  it('after an evaluation and a deploy of the same IR, puts predicted and measured tok/s and hand-off rate side by side', async () => {
    t = await startTestServer({ latency: { small: 2, large: 6 } });
    const ir = rStitchIr();
    const text = await (await post(`${t.url}/admin/evaluate`, { ir, problems: 24, concurrency: 4, maxTokens: 32 })).text();
    const last = JSON.parse(text.trim().split('\n').at(-1)!) as EvaluateEvent;
    expect(last.type).toBe('result');
    // named (and moved) after the evaluation, as a designer user does before deploying: the same behaviour
    const named = { ...ir, name: 'mine', description: 'renamed after evaluating' };
    expect((await post(`${t.url}/admin/algorithms/mine/versions`, { ir: named, activate: true })).status).toBe(201);
    // other traffic before the watch: the first window is the algorithm's alone
    await traffic(t, 'r-stitch', 1, 300);
    // watching starts with the first question, as the timeline asks
    const first = predictionCheckSchema.parse((await check(t, 'mine')).json);
    expect(first).toMatchObject({ algorithm: 'mine', version: 1, evaluated: true, requests: 0, predicted: null });
    const sent = await traffic(t, 'mine', 4, 4000);
    const c = predictionCheckSchema.parse((await check(t, 'mine')).json);
    expect(c.requests).toBe(sent);
    expect(c.busyMs).toBeGreaterThan(2000);
    expect(c.meanActive).toBeGreaterThan(3);
    expect(c.meanActive).toBeLessThanOrEqual(4);
    expect(c.measured.tokS).toBeGreaterThan(0);
    expect(c.measured.handoffsPerToken).toBeGreaterThan(0);
    expect(c.predicted!.tokS).toBeGreaterThan(0);
    expect(c.predicted!.handoffsPerToken).toBeGreaterThan(0);
    // the band holds the figure; what was compared: the same concurrency, request shape and max_tokens as the evaluation's
    expect(c.predicted!.tokSBand.low).toBeLessThanOrEqual(c.predicted!.tokS);
    expect(c.predicted!.tokSBand.high).toBeGreaterThanOrEqual(c.predicted!.tokS);
    expect(c.compared).toMatchObject({ concurrency: Math.round(c.meanActive), maxTokens: 32, evaluatedMaxTokens: 32, evaluatedConcurrency: 4 });
    expect(c.compared!.tokensPerRequest).toBeCloseTo((c.measured.tokS * c.busyMs) / 1000 / c.requests, 6);
    expect(c.compared!.otherShare).toBeLessThan(0.1);
    expect(c.notComparable).toEqual([]);
    expect(c.comparable).toBe(true);
    expect(c.tokSDiff).toBeCloseTo(Math.abs(c.predicted!.tokS - c.measured.tokS) / c.measured.tokS, 9);
    expect(c.inBand).toBe(c.measured.tokS >= c.predicted!.tokSBand.low && c.measured.tokS <= c.predicted!.tokSBand.high);
    expect(c.flagged).toBe(c.tokSDiff! > PREDICTION_TOLERANCE || c.handoffDiff! > PREDICTION_TOLERANCE);
    console.log(`prediction check: ${JSON.stringify(c)}`);
    // the same algorithm beside as much other traffic on the same models: not what was predicted, so no percentage and no flag
    const [sent2, others] = await Promise.all([traffic(t, 'mine', 4, 2000), traffic(t, 'r-stitch', 4, 2000)]);
    const shared = predictionCheckSchema.parse((await check(t, 'mine', 2000)).json);
    // other traffic's requests are not counted as the algorithm's
    expect(shared.requests).toBeGreaterThan(0);
    expect(shared.requests).toBeLessThanOrEqual(sent2);
    expect(others).toBeGreaterThan(0);
    expect(shared.predicted).not.toBeNull();
    expect(shared.comparable).toBe(false);
    expect(shared.compared!.otherShare).toBeGreaterThan(0.1);
    expect(shared.notComparable.some((r) => r.startsWith('other traffic shared the models'))).toBe(true);
    expect(shared).toMatchObject({ tokSDiff: null, handoffDiff: null, inBand: null, flagged: false });
  });

  it('an algorithm never evaluated has nothing predicted; unknown names and bad windows are refused', async () => {
    t = await startTestServer();
    const c = predictionCheckSchema.parse((await check(t, 'r2r')).json);
    expect(c).toMatchObject({ algorithm: 'r2r', evaluated: false, predicted: null, flagged: false });
    expect((await check(t, 'nope')).status).toBe(404);
    const bad = await check(t, 'r2r', 10);
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ error: { param: 'windowMs' } });
    expect((await fetch(`${t.url}/admin/prediction-check`)).status).toBe(400);
  });
});

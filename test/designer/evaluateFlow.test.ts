// The Evaluate panel's store against a scripted server: progress, result and prediction become a plot point; cancel reaches the server; a refusal is shown; a new concurrency re-prices every point.
import { describe, expect, it } from 'vitest';
import type { EvaluateEvent, EvaluationResult, Prediction } from '../../shared/api/evaluate.ts';
import type { IrDocument } from '../../shared/ir/irSchema.ts';
import { ApiError, type EvaluateRun } from '../../designer/src/designer/api.ts';
import { DEFAULT_TASK, EvaluateFlow, type EvaluateServer } from '../../designer/src/designer/evaluateFlow.ts';

const IR = { version: 1 } as unknown as IrDocument;

function result(runId: string, accuracy: number): EvaluationResult {
  return {
    runId,
    label: 'x',
    irKey: null,
    task: 'word-problems',
    grader: 'final-number',
    problems: 4,
    correct: accuracy * 4,
    accuracy,
    meanOutputTokens: 10,
    handoffsPerRequest: 1,
    tokenShare: { small: 0.7, large: 0.3 },
    routing: {
      models: ['small', 'large'],
      P: [
        [0.9, 0.1],
        [0.5, 0.5],
      ],
      C: [
        [1, 0],
        [1, 1],
      ],
      steps: [30, 10],
    },
    concurrency: 4,
    maxTokens: 16,
    durationMs: 100,
    meanInFlight: 4,
    tokS: 400,
    failed: 0,
  };
}

/** A server whose runs the test drives: each evaluate() waits until the test ends it. */
class FakeServer implements EvaluateServer {
  runs: { run: EvaluateRun; end: (e: EvaluateEvent | Error) => void }[] = [];
  cancelled: string[] = [];
  predicted: [string, number, number][] = [];
  setSize = 1000;
  boundsAsked: string[] = [];
  async bounds(task: string) {
    this.boundsAsked.push(task);
    if (task.startsWith('/bad'))
      throw new ApiError(`task: no bundled task "${task}" (bundled: word-problems, multiplication) and no file or folder at ${task}`, 400);
    return {
      task,
      tasks: [
        { name: 'word-problems', grader: 'final-number' },
        { name: 'multiplication', grader: 'regex' },
      ],
      problems: task === DEFAULT_TASK ? this.setSize : 7,
      defaultProblems: 100,
      concurrency: 8,
    };
  }
  evaluate(run: EvaluateRun): Promise<void> {
    return new Promise((resolve, reject) => {
      const id = `run${this.runs.length + 1}`;
      run.onEvent({ type: 'started', runId: id, problems: run.body.problems ?? 100, concurrency: 4, maxTokens: 16, models: ['small', 'large'] });
      run.signal.addEventListener('abort', () => reject(new Error('aborted')));
      this.runs.push({ run, end: (e) => (e instanceof Error ? reject(e) : (run.onEvent(e), resolve())) });
    });
  }
  async cancel(runId: string) {
    this.cancelled.push(runId);
    return { runId, cancelled: true };
  }
  async predict(runId: string, concurrency: number, clientMs: number): Promise<Prediction> {
    this.predicted.push([runId, concurrency, clientMs]);
    // clients with time of their own keep fewer on the models: fewer tok/s
    const setting = {
      thresholds: { small: 1, large: 2 },
      tokS: (100 * concurrency) / (1 + clientMs / 10),
      tokSBand: { low: (90 * concurrency) / (1 + clientMs / 10), high: (110 * concurrency) / (1 + clientMs / 10) },
      inEngine: concurrency,
      p99TpotMs: 12,
      meanTpotMs: 8,
    };
    return {
      runId,
      concurrency,
      best: setting,
      current: setting,
      entryMs: null,
      transitMs: null,
      clientMs,
      latencyBatches: { small: 5, large: 5 },
      liveBatches: { small: 0, large: 5 },
      method: 'chain',
    };
  }
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('EvaluateFlow', () => {
  it("bounds the problems field by the server's set once it has said, and leaves it open while it has not", async () => {
    const server = new FakeServer();
    const flow = new EvaluateFlow(server);
    flow.setProblems(5000);
    expect(flow.getState()).toMatchObject({ problems: 5000, maxProblems: null });
    server.setSize = 300;
    await flow.loadBounds();
    // a choice past the set comes down to it, and later ones stop there
    expect(flow.getState()).toMatchObject({ problems: 300, maxProblems: 300 });
    flow.setProblems(800);
    expect(flow.getState().problems).toBe(300);
    flow.setProblems(120);
    expect(flow.getState().problems).toBe(120);
    // a server that cannot say (no admin token yet) leaves things as they are
    const down = new FakeServer();
    down.bounds = () => Promise.reject(new Error('401'));
    const open = new EvaluateFlow(down);
    await open.loadBounds();
    expect(open.getState().maxProblems).toBeNull();
  });

  it('a task picked by path is asked for its bounds, sent with every run, and starts the plot over; a bad one says why', async () => {
    const server = new FakeServer();
    const flow = new EvaluateFlow(server);
    await flow.loadBounds();
    expect(flow.getState()).toMatchObject({
      task: 'word-problems',
      tasks: [{ name: 'word-problems' }, { name: 'multiplication' }],
      maxProblems: 1000,
      taskByPath: false,
    });
    const first = flow.evaluateDraft(IR);
    server.runs[0].end({ type: 'result', result: result('run1', 0.5) });
    await first;
    expect(server.runs[0].run.body).toMatchObject({ task: 'word-problems' });
    expect(flow.getState().points).toHaveLength(1);
    await flow.setTask('/tasks/caps', true);
    expect(flow.getState()).toMatchObject({ task: '/tasks/caps', taskByPath: true, maxProblems: 7, problems: 7, points: [], result: null, status: 'idle' });
    const second = flow.evaluateDraft(IR);
    server.runs[1].end({ type: 'result', result: result('run2', 0.25) });
    await second;
    expect(server.runs[1].run.body).toMatchObject({ task: '/tasks/caps', problems: 7 });
    await flow.setTask('/bad/path', true);
    expect(flow.getState()).toMatchObject({
      status: 'error',
      maxProblems: null,
      message: expect.stringMatching(/^Task \/bad\/path: .*no file or folder at \/bad\/path/),
    });
    expect(server.boundsAsked).toEqual(['word-problems', '/tasks/caps', '/bad/path']);
  });

  it("runs at the concurrency it predicts for, within the server's bound, so the latencies are measured at the batch sizes predicted", async () => {
    const server = new FakeServer();
    const flow = new EvaluateFlow(server);
    // bounds unknown: the server's own default, nothing sent
    void flow.evaluateDraft(IR);
    expect(server.runs[0].run.body).not.toHaveProperty('concurrency');
    server.runs[0].end({ type: 'cancelled', done: 0, total: 4 });
    await tick();
    await flow.loadBounds();
    void flow.evaluateDraft(IR);
    expect(server.runs[1].run.body).toMatchObject({ concurrency: 8 });
    server.runs[1].end({ type: 'cancelled', done: 0, total: 4 });
    await tick();
    void flow.setConcurrency(3);
    await tick();
    void flow.evaluateDraft(IR);
    expect(server.runs[2].run.body).toMatchObject({ concurrency: 3 });
    server.runs[2].end({ type: 'cancelled', done: 0, total: 4 });
    await tick();
    // above the server's bound of 8: the run takes 8, the prediction still the 20 asked for
    void flow.setConcurrency(20);
    await tick();
    void flow.evaluateDraft(IR);
    expect(server.runs[3].run.body).toMatchObject({ concurrency: 8 });
  });

  it("progress, result and prediction make the draft's point; the next draft replaces it", async () => {
    const server = new FakeServer();
    const flow = new EvaluateFlow(server);
    flow.setProblems(4);
    const done = flow.evaluateDraft(IR);
    expect(flow.getState()).toMatchObject({ status: 'running', runId: 'run1', progress: { done: 0, total: 4 } });
    expect(server.runs[0].run.body).toMatchObject({ ir: IR, problems: 4, client: expect.stringMatching(/^designer-/) });
    server.runs[0].run.onEvent({ type: 'progress', done: 1, total: 4, correct: 1, elapsedMs: 5 });
    expect(flow.getState().progress).toEqual({ done: 1, total: 4, correct: 1 });
    server.runs[0].end({ type: 'result', result: result('run1', 0.75) });
    await done;
    expect(flow.getState()).toMatchObject({ status: 'done', result: { accuracy: 0.75 }, prediction: { best: { tokS: 800 } } });
    expect(flow.getState().points).toEqual([{ label: 'draft', kind: 'draft', runId: 'run1', accuracy: 0.75, tokS: 800 }]);
    const again = flow.evaluateDraft(IR);
    server.runs[1].end({ type: 'result', result: result('run2', 0.5) });
    await again;
    expect(flow.getState().points.map((p) => p.runId)).toEqual(['run2']);
  });

  it('cancel tells the server and ends as cancelled; a refusal shows its message', async () => {
    const server = new FakeServer();
    const flow = new EvaluateFlow(server);
    const run = flow.evaluateDraft(IR);
    await flow.cancel();
    await run;
    expect(server.cancelled).toEqual(['run1']);
    expect(flow.getState().status).toBe('cancelled');
    const refused = flow.evaluateDraft(IR);
    server.runs[1].end(new ApiError('the draft does not compile: tau: must be a number', 400, 'invalid_ir'));
    await refused;
    expect(flow.getState()).toMatchObject({ status: 'error', message: 'the draft does not compile: tau: must be a number (400)' });
  });

  it('compares with served names one at a time, then a new concurrency re-prices every point', async () => {
    const server = new FakeServer();
    const flow = new EvaluateFlow(server);
    const all = flow.compare([
      { name: 'small', kind: 'model' },
      { name: 'r2r', kind: 'algorithm' },
    ]);
    expect(server.runs).toHaveLength(1);
    expect(server.runs[0].run.body).toMatchObject({ model: 'small' });
    server.runs[0].end({ type: 'result', result: result('run1', 0.25) });
    while (server.runs.length < 2) await tick();
    expect(server.runs[1].run.body).toMatchObject({ model: 'r2r' });
    server.runs[1].end({ type: 'result', result: result('run2', 1) });
    await all;
    expect(flow.getState().points.map((p) => [p.label, p.kind, p.tokS])).toEqual([
      ['small', 'model', 800],
      ['r2r', 'algorithm', 800],
    ]);
    await flow.setConcurrency(2);
    expect(flow.getState().points.map((p) => p.tokS)).toEqual([200, 200]);
    expect(server.predicted.slice(-2)).toEqual([
      ['run1', 2, 0],
      ['run2', 2, 0],
    ]);
    // the clients' own time re-prices every point too, and a bad entry reads as none
    await flow.setClientMs(10);
    expect(flow.getState().points.map((p) => p.tokS)).toEqual([100, 100]);
    expect(server.predicted.slice(-2)).toEqual([
      ['run1', 2, 10],
      ['run2', 2, 10],
    ]);
    await flow.setClientMs(Number('x'));
    expect(flow.getState().clientMs).toBe(0);
  });

  it('a comparison entry that cannot run says why, and the rest go on (issue 53 item 4)', async () => {
    const server = new FakeServer();
    const flow = new EvaluateFlow(server);
    const all = flow.compare([
      { name: 'citer', kind: 'algorithm' },
      { name: 'me', kind: 'algorithm', skip: 'not served here' },
      { name: 'r2r', kind: 'algorithm' },
    ]);
    server.runs[0].end(new ApiError('The model `citer` does not exist', 404, 'not_found', 'model'));
    while (server.runs.length < 2) await tick();
    expect(server.runs[1].run.body).toMatchObject({ model: 'r2r' });
    server.runs[1].end({ type: 'result', result: result('run2', 1) });
    await all;
    expect(flow.getState().points.map((p) => p.label)).toEqual(['r2r']);
    expect(flow.getState().notCompared).toEqual([
      { name: 'citer', why: 'The model `citer` does not exist (404)' },
      { name: 'me', why: 'not served here' },
    ]);
    expect(flow.getState()).toMatchObject({ status: 'done', message: 'Compared 1 of 3; 2 could not run (listed below).' });
  });

  it('a new concurrency changes the plot and the table together, once every point is priced (issue 53 item 15)', async () => {
    const server = new FakeServer();
    const flow = new EvaluateFlow(server);
    const all = flow.compare([
      { name: 'small', kind: 'model' },
      { name: 'r2r', kind: 'algorithm' },
    ]);
    server.runs[0].end({ type: 'result', result: result('run1', 0.25) });
    while (server.runs.length < 2) await tick();
    server.runs[1].end({ type: 'result', result: result('run2', 1) });
    await all;
    expect(flow.getState()).toMatchObject({ pricedAt: 8, repricing: false });
    // hold the second prediction: the first point is priced, the figures must not move yet
    const predict = server.predict.bind(server);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let calls = 0;
    server.predict = async (...a) => (++calls === 2 ? held.then(() => predict(...a)) : predict(...a));
    const repricing = flow.setConcurrency(2);
    while (calls < 2) await tick();
    expect(flow.getState()).toMatchObject({ concurrency: 2, pricedAt: 8, repricing: true });
    expect(flow.getState().points.map((p) => p.tokS)).toEqual([800, 800]);
    release();
    await repricing;
    expect(flow.getState()).toMatchObject({ pricedAt: 2, repricing: false });
    expect(flow.getState().points.map((p) => p.tokS)).toEqual([200, 200]);
  });
});

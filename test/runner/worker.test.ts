// WorkerRunner (model in a worker thread) gives the in-thread runner's results, and a crash rejects pending steps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerRunner, WorkerRunnerError } from '../../runtime/runner/workerRunner.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { GREEDY, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS, type StepWants } from '../../shared/algorithm.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { generateGreedy } from '../../runtime/runner/onnxAccuracy.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

describe('WorkerRunner', () => {
  let inThread: OnnxRunner;
  let worker: WorkerRunner;
  let prompts: number[][];
  beforeAll(async () => {
    [inThread, worker] = await Promise.all([OnnxRunner.load(tinyModelDir('small')), WorkerRunner.start(tinyModelDir('small'), { intraOpNumThreads: 1 })]);
    const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
    prompts = tinyQuestions(8).map((q) => tok.encodeChat([{ role: 'user', content: q }]));
  }, 60_000);
  afterAll(async () => {
    await inThread?.close();
    await worker?.close();
  });

  it('has the same info and greedy outputs as the in-thread runner', async () => {
    expect(worker.info).toEqual(inThread.info);
    const a = await generateGreedy(inThread, prompts, { batch: 4 });
    const b = await generateGreedy(worker, prompts, { batch: 4 });
    expect(b).toEqual(a);
  });

  it('returns hidden state and router head scores identical to in-thread', async () => {
    const wants: StepWants = { topK: 4, hidden: true, heads: ['citer', 'r2r', 'colm'] };
    const rows: StepRow[] = prompts.slice(0, 3).map((p, i) => ({ cacheId: 50 + i, requestId: `h${i}`, tokens: p, position: 0, sampling: GREEDY, wants }));
    const a = await inThread.step(rows);
    const b = await worker.step(rows);
    expect(b.rows.map((r) => r.token)).toEqual(a.rows.map((r) => r.token));
    for (let i = 0; i < 3; i++) {
      expect(b.rows[i].hidden).toBeInstanceOf(Float32Array);
      expect(Array.from(b.rows[i].hidden!)).toEqual(Array.from(a.rows[i].hidden!));
      expect(b.rows[i].heads).toEqual(a.rows[i].heads);
      expect(b.rows[i].topIds).toHaveLength(4);
    }
    rows.forEach((r) => {
      inThread.release(r.cacheId);
      worker.release(r.cacheId);
    });
  });

  it('rejects a bad step with the runner error and stays usable', async () => {
    await expect(worker.step([{ cacheId: 9, requestId: 'x', tokens: [5], position: 4, sampling: GREEDY, wants: NO_WANTS }])).rejects.toThrow(
      /cache holds 0 tokens/,
    );
    const ok = await worker.step([{ cacheId: 9, requestId: 'x', tokens: prompts[0], position: 0, sampling: GREEDY, wants: NO_WANTS }]);
    expect(ok.rows).toHaveLength(1);
    expect(ok.modelMs).toBeGreaterThan(0);
    worker.release(9);
  });

  it('a crashed worker rejects the pending step and later ones with a clear error', async () => {
    const w = await WorkerRunner.start(tinyModelDir('small'));
    w.crashForTest('boom');
    const pending = w.step([{ cacheId: 1, requestId: 'c', tokens: prompts[0], position: 0, sampling: GREEDY, wants: NO_WANTS }]);
    await expect(pending).rejects.toBeInstanceOf(WorkerRunnerError);
    await expect(pending).rejects.toThrow(/worker for model "small" crashed: boom/);
    await expect(w.step([{ cacheId: 1, requestId: 'c', tokens: prompts[0], position: 0, sampling: GREEDY, wants: NO_WANTS }])).rejects.toThrow(
      /worker for model "small"/,
    );
    await w.close();
  }, 30_000);

  it('a worker that cannot load its folder rejects start()', async () => {
    await expect(WorkerRunner.start('/nonexistent/model')).rejects.toThrow(/not a directory/);
  }, 30_000);
});

// Trace files from the commands that run many servers or clusters: one parseable file per run, as the timeline opens them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { simulatedRunners } from '../bench/benchRunners.ts';
import { runServingCase } from '../bench/servingCase.ts';
import { defaultPlan, evaluate } from '../../runtime/eval/evaluate.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { TraceDir } from '../../runtime/trace/traceDir.ts';
import { parseTrace } from '../../shared/timeline/parseTrace.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-traces-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const read = (file: string) => parseTrace(fs.readFileSync(file, 'utf8'));
const count = (events: { type: string }[], type: string) => events.filter((e) => e.type === type).length;

describe('TraceDir', () => {
  it('numbers files in run order and keeps labels safe as file names', () => {
    const dir = new TraceDir(path.join(tmp, 'names'));
    const a = dir.open('r-stitch τ=0.03');
    const b = dir.open('../../etc/passwd');
    expect(dir.files.map((f) => path.basename(f))).toEqual(['01-r-stitch_=0.03.jsonl', '02-.._.._etc_passwd.jsonl']);
    expect(dir.files.every((f) => path.dirname(f) === dir.dir)).toBe(true);
    return Promise.all([a.close(), b.close()]);
  });
});

describe('tokenrouter eval --trace', () => {
  it('writes one trace per entry, each holding every request it ran', async () => {
    const tok = { encodeChat: (m: { content: string }[]) => [1, ...m[0].content.split('').map((c) => 2 + (c.charCodeAt(0) % 40))], decode: () => '= 0' };
    const runners = new Map(['small', 'large'].map((name) => [name, new SimRunner({ name, vocabSize: 64, eosTokenIds: [] })]));
    const plan = defaultPlan(['small', 'large']).filter((p) => p.name === 'small-only' || p.name.startsWith('r-stitch'));
    const problems = Array.from({ length: 6 }, (_, i) => ({ question: `${i}*7`, answer: `${i * 7}` }));
    const traceDir = new TraceDir(path.join(tmp, 'eval'));
    const entries = await evaluate({ runners, tokenizer: tok as never, problems, grade: () => false, plan, concurrency: 3, maxTokens: 12, traceDir });
    expect(traceDir.files.length).toBe(entries.length);
    expect(entries.length).toBe(plan.length);
    for (const file of traceDir.files) {
      const t = read(file);
      expect(t.invalid).toBe(0);
      expect(count(t.events, 'request-end')).toBe(problems.length);
      expect(count(t.events, 'batch')).toBeGreaterThan(0);
    }
    // R-Stitch runs on both models; small-only on one.
    const lanes = (file: string) => new Set(read(file).events.flatMap((e) => (e.type === 'batch' ? [e.model] : [])));
    expect(lanes(traceDir.files.find((f) => f.includes('small-only'))!)).toEqual(new Set(['small']));
    expect(lanes(traceDir.files.find((f) => f.includes('r-stitch'))!)).toEqual(new Set(['small', 'large']));
  });
});

describe('npm run bench -- <serving suite> --trace', () => {
  it('writes each server run with its config and every request', async () => {
    const dir = path.join(tmp, 'bench');
    const traceDir = new TraceDir(dir);
    const set = simulatedRunners(['small', 'large']);
    try {
      for (const mode of [
        { label: 'baseline', mode: 'step-sync', retainState: false },
        { label: 'tokenrouter', mode: 'async-delayed', retainState: true },
      ] as const) {
        await runServingCase(set, {
          algorithm: 'r2r',
          lanes: { small: 'small', large: 'large' },
          mode,
          concurrency: 2,
          requests: 4,
          warmup: 1,
          maxTokens: 16,
          client: 'inline',
          traceDir,
        });
      }
    } finally {
      await set.close();
    }
    const files = fs.readdirSync(dir).sort();
    expect(files).toEqual(['01-r2r-baseline.jsonl', '02-r2r-tokenrouter.jsonl']);
    for (const [k, f] of files.entries()) {
      const t = read(path.join(dir, f));
      expect(t.invalid).toBe(0);
      const config = t.events.find((e) => e.type === 'config');
      expect(config?.type === 'config' && config.mode).toBe(k === 0 ? 'step-sync' : 'async-delayed');
      expect(count(t.events, 'request-end')).toBe(5); // warm-up included
    }
  });
});

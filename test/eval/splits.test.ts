// The validation and held-out splits: their documented sizes, disjoint from each other and from every shipped training run's problems.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSplit, type SplitFile, type TrainingRun } from '../../runtime/eval/splits.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { PythonRandom, makeProblem } from './pythonRandom.ts';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const MODELS = TINY_FAMILY_DIR;
const heldout = loadSplit(MODELS, 'heldout');
const validation = loadSplit(MODELS, 'validation');
const questions = (s: SplitFile) => s.rows.map((r) => r.question);

/** Every problem a run's batches drew (replays train_batch: problems in `excluded` are drawn, then skipped). */
function drawnBy(run: TrainingRun, excluded: ReadonlySet<string>): { drawn: Set<string>; trained: Set<string> } {
  const rng = new PythonRandom(run.seed);
  const drawn = new Set<string>();
  const trained = new Set<string>();
  for (let b = 0; b < run.batches; b++) {
    let kept = 0;
    while (kept < run.batch_size) {
      const p = makeProblem(rng);
      drawn.add(p);
      if (excluded.has(p)) continue;
      trained.add(p);
      kept++;
    }
  }
  return { drawn, trained };
}

/** Distinct problems of a seed's stream (splits.py's eval_problems). */
function stream(seed: number, n: number): string[] {
  const rng = new PythonRandom(seed);
  const out = new Set<string>();
  while (out.size < n) out.add(makeProblem(rng));
  return [...out];
}

describe('problem splits', () => {
  it('have the documented sizes and seeds, distinct problems and right answers', () => {
    expect([heldout.n, heldout.seed, heldout.first_kept]).toEqual([2000, 7, 500]);
    expect([validation.n, validation.seed]).toEqual([1000, 8]);
    for (const s of [heldout, validation]) {
      expect(new Set(questions(s)).size).toBe(s.n);
      for (const r of s.rows) {
        const [a, b] = r.question.split('*').map(Number);
        expect(r.answer).toBe(String(a * b));
      }
    }
  });

  it('validation and held-out share no problem', () => {
    const h = new Set(questions(heldout));
    expect(questions(validation).filter((q) => h.has(q))).toEqual([]);
  });

  it('the Python stream port reproduces the first 500 held-out problems, drawn with seed 7 before any training', () => {
    expect(questions(heldout).slice(0, 500)).toEqual(stream(7, 500));
  });

  it('list the shipped models’ training runs with the step counts their training.json records', () => {
    const info = (m: string) =>
      JSON.parse(fs.readFileSync(path.join(MODELS, m, 'training.json'), 'utf8')) as { steps: number; previous_phases?: { steps: number }[] };
    const runs = heldout.excluded_runs;
    expect(runs).toEqual(validation.excluded_runs);
    const steps = (name: string) => runs.find((r) => r.run === name)?.batches;
    expect(steps('train small')).toBe(info('small').steps);
    expect(steps('train medium')).toBe(info('medium').steps);
    expect(steps('train large')).toBe(info('large').previous_phases?.[0].steps);
    expect(steps('train large, phase 1')).toBe(info('large').steps);
  });

  it('no training run trained on a split problem, and every problem added after the first 500 is one no run even drew', () => {
    const first = new Set(questions(heldout).slice(0, 500));
    const trained = new Set<string>();
    const drawn = new Set<string>();
    for (const run of heldout.excluded_runs) {
      const r = drawnBy(run, first);
      r.trained.forEach((p) => trained.add(p));
      r.drawn.forEach((p) => drawn.add(p));
    }
    expect(trained.size).toBeGreaterThan(80_000);
    const all = [...questions(heldout), ...questions(validation)];
    expect(all.filter((q) => trained.has(q))).toEqual([]);
    expect([...questions(heldout).slice(500), ...questions(validation)].filter((q) => drawn.has(q))).toEqual([]);
  });

  it('an unknown split name or a missing file is a clear error', () => {
    expect(() => loadSplit(MODELS, 'train')).toThrow(TokenRouterError);
    expect(() => loadSplit(MODELS, 'train')).toThrow(/unknown split "train"; splits: validation, heldout/);
    expect(() => loadSplit('/nonexistent', 'heldout')).toThrow(/no heldout split at/);
  });
});

// The word-problem task: seeded, arithmetic right in every worked answer, graded by the final number, splits disjoint by key.
import { describe, expect, it } from 'vitest';
import { drawDistinct, drawProblem, evalSplits, finalNumber, seededRandom, TEMPLATE_NAMES, trainingProblems } from '../../examples/training/wordProblems.ts';

const OPS: Record<string, (a: number, b: number) => number> = { '+': (a, b) => a + b, '-': (a, b) => a - b, '*': (a, b) => a * b, '/': (a, b) => a / b };

describe('word problems', () => {
  it('gives the same problems for the same seed and others for another', () => {
    const a = drawDistinct(50, 3);
    expect(drawDistinct(50, 3)).toEqual(a);
    expect(drawDistinct(50, 4).map((p) => p.key)).not.toEqual(a.map((p) => p.key));
  });

  it('writes steps whose arithmetic holds, small non-negative integers, and the final line the grader reads', () => {
    const r = seededRandom(11);
    const used = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const p = drawProblem(r);
      used.add(p.template);
      const steps = [...p.answer.matchAll(/(\d+) ([-+*/]) (\d+) = (\d+)/g)];
      expect(steps.length, p.answer).toBeGreaterThanOrEqual(2);
      for (const [, x, op, y, z] of steps) expect(OPS[op](Number(x), Number(y)), p.answer).toBe(Number(z));
      // the last step's result is the answer
      expect(Number(steps[steps.length - 1][4])).toBe(p.final);
      expect(Number.isInteger(p.final) && p.final >= 0 && p.final < 1000).toBe(true);
      expect(p.answer.endsWith(`\nThe answer is ${p.final}.`)).toBe(true);
      expect(finalNumber(p.answer)).toBe(p.final);
    }
    expect([...used].sort()).toEqual([...TEMPLATE_NAMES].sort());
  });

  it('grades by the last "The answer is N" and finds none without one', () => {
    expect(finalNumber('so 3 * 4 = 12.\nThe answer is 12.')).toBe(12);
    expect(finalNumber('The answer is 5. No wait. The answer is 7.')).toBe(7);
    expect(finalNumber('the result is 12')).toBeUndefined();
  });

  it('keeps held-out, validation and training apart by key', () => {
    const s = evalSplits();
    expect(s.heldout).toHaveLength(2000);
    expect(s.validation).toHaveLength(1000);
    const held = new Set(s.heldout.map((p) => p.key));
    expect(held.size).toBe(2000);
    for (const p of s.validation) expect(held.has(p.key)).toBe(false);
    const train = trainingProblems(20000, 1000, s.excluded);
    for (const p of train) expect(s.excluded.has(p.key)).toBe(false);
    // the splits take a small share of each template's problems: training still draws every template
    const perTemplate = new Map<string, number>();
    for (const p of train) perTemplate.set(p.template, (perTemplate.get(p.template) ?? 0) + 1);
    for (const t of TEMPLATE_NAMES) expect(perTemplate.get(t) ?? 0).toBeGreaterThan(20000 / TEMPLATE_NAMES.length / 2);
  });
});

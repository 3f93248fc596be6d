// The load generator's and the benchmarks' prompts are the default task's validation word problems, warm-ups apart from measured ones, and fit the bundled models.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TASK, loadTask } from '../../runtime/eval/loadTask.ts';
import { sampleProblem, sampleProblemCount, sampleQuestion } from '../../runtime/http/loadGenerator.ts';
import { benchPrompt, FEW_SHOT, fewShotChat } from '../../runtime/loadgen/benchPrompt.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';

const validation = loadTask(DEFAULT_TASK, '').split('validation').problems;
const heldout = new Set(
  loadTask(DEFAULT_TASK, '')
    .split('heldout')
    .problems.map((p) => p.question),
);
const n = validation.length;

describe('sampleQuestion', () => {
  it('cycles through the validation problems in order, for any integer', () => {
    expect(sampleProblemCount()).toBe(n);
    expect(sampleProblem(0)).toEqual(validation[0]);
    expect(sampleQuestion(n + 3)).toBe(validation[3].question);
    expect(sampleQuestion(-1)).toBe(validation[n - 1].question);
    expect(heldout.has(sampleQuestion(5))).toBe(false);
  });
});

describe('benchPrompt', () => {
  it('gives measured and warm-up requests disjoint questions', () => {
    const half = Math.floor(n / 2);
    const measured = new Set(Array.from({ length: 3 * n }, (_, i) => benchPrompt(i)));
    const warm = new Set(Array.from({ length: 3 * n }, (_, i) => benchPrompt(-1 - i)));
    expect(measured.size).toBe(half);
    expect(warm.size).toBe(n - half);
    expect([...warm].filter((q) => measured.has(q))).toEqual([]);
  });

  it('opens each few-shot chat with the preamble; the second turn resends the first question and its final answer', () => {
    const first = fewShotChat(4);
    const second = fewShotChat(5);
    expect(first.slice(0, FEW_SHOT.length)).toEqual(FEW_SHOT);
    expect(second.slice(0, first.length)).toEqual(first);
    const answer = validation.find((p) => p.question === first.at(-1)!.content)!.answer;
    expect(second[first.length]).toEqual({ role: 'assistant', content: `The answer is ${answer}.` });
    expect(fewShotChat(-4).at(-1)!.content).not.toBe(first.at(-1)!.content);
    // the preamble's worked answers end as the bundled task grades them
    const grade = loadTask(DEFAULT_TASK, '').grade;
    for (let k = 1; k < FEW_SHOT.length; k += 2) expect(grade(FEW_SHOT[k].content as string, /(\d+)\.$/.exec(FEW_SHOT[k].content as string)![1])).toBe(true);
  });

  it('fits the bundled models: a two-turn few-shot chat and a long answer within their context', () => {
    const folder = loadModelFolder(path.join(BUNDLED_MODELS_DIR, 'small'));
    const tok = TextTokenizer.fromFolder(folder);
    const longest = Math.max(...Array.from({ length: 50 }, (_, i) => tok.encodeChat(fewShotChat(2 * i + 1)).length));
    expect(longest + 128).toBeLessThanOrEqual(folder.config.maxContext);
  });
});

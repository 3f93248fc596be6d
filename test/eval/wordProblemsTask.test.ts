// The committed word-problem task folder is what writeTask.ts derives from the splits, loads as a task, and grades its own answers right.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTask } from '../../runtime/eval/loadTask.ts';
import { taskLines, WORD_PROBLEMS_TASK } from '../../examples/training/writeTask.ts';
import { evalSplits } from '../../examples/training/wordProblems.ts';

const dir = path.resolve('examples/tasks/word-problems');

describe('examples/tasks/word-problems', () => {
  const splits = evalSplits();

  it('holds exactly the derived splits and header (rerun writeTask.ts when the templates change)', () => {
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'task.json'), 'utf8'))).toEqual(WORD_PROBLEMS_TASK);
    expect(fs.readFileSync(path.join(dir, 'validation.jsonl'), 'utf8')).toBe(taskLines(splits.validation));
    expect(fs.readFileSync(path.join(dir, 'heldout.jsonl'), 'utf8')).toBe(taskLines(splits.heldout));
  });

  it('loads as a task whose grader takes the worked answers and refuses a wrong final number', () => {
    const task = loadTask(dir, 'examples/models');
    expect(task.splits()).toEqual(['validation', 'heldout']);
    const held = task.split('heldout').problems;
    expect(held).toHaveLength(2000);
    splits.heldout.slice(0, 200).forEach((p, i) => {
      expect(held[i].question).toBe(p.question);
      expect(task.grade(p.answer, held[i].answer)).toBe(true);
      expect(
        task.grade(
          p.answer.replace(/The answer is (-?\d+)/, (_, n) => `The answer is ${Number(n) + 1}`),
          held[i].answer,
        ),
      ).toBe(false);
    });
  });
});

// Task files as data: the header and line schemas, the errors that name file, line and key, and the bundled task derived from the split files.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledTasks, chatOf, DEFAULT_TASK, loadTask } from '../../runtime/eval/loadTask.ts';
import { loadSplit } from '../../runtime/eval/splits.ts';
import { taskHeaderSchema, taskLineSchema } from '../../shared/task.ts';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const MODELS = TINY_FAMILY_DIR;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-task-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

let n = 0;
/** A task folder with these files (objects become task.json, arrays of lines become JSONL). */
function folder(files: Record<string, unknown>): string {
  const dir = path.join(tmp, `t${++n}`);
  fs.mkdirSync(dir);
  for (const [name, body] of Object.entries(files))
    fs.writeFileSync(
      path.join(dir, name),
      Array.isArray(body) ? body.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') : JSON.stringify(body),
    );
  return dir;
}
const header = { name: 'caps', grader: { kind: 'exact' } };

describe('task schemas', () => {
  it('accepts each grader kind and refuses an unknown one, a bad pattern and unknown keys', () => {
    for (const grader of [{ kind: 'final-number' }, { kind: 'exact' }, { kind: 'choice' }, { kind: 'regex', pattern: '(\\d+)$', flags: 'i' }])
      expect(taskHeaderSchema.safeParse({ name: 'x', grader }).success, grader.kind).toBe(true);
    expect(taskHeaderSchema.safeParse({ name: 'x', grader: { kind: 'fuzzy' } }).success).toBe(false);
    const badPattern = taskHeaderSchema.safeParse({ name: 'x', grader: { kind: 'regex', pattern: '(' } });
    expect(badPattern.error?.issues[0].path).toEqual(['grader', 'pattern']);
    expect(taskHeaderSchema.safeParse({ name: 'x', grader: { kind: 'regex', pattern: 'a', flags: 'q' } }).success).toBe(false);
    expect(taskHeaderSchema.safeParse({ name: 'x', grader: { kind: 'exact', pattern: 'a' } }).success).toBe(false);
  });
  it('takes a prompt or messages, exactly one, and keeps a numeric answer as its text', () => {
    expect(taskLineSchema.parse({ prompt: 'q', answer: 12 })).toEqual({ prompt: 'q', answer: '12' });
    expect(taskLineSchema.parse({ messages: [{ role: 'user', content: 'q' }], answer: 'A' }).messages).toHaveLength(1);
    expect(taskLineSchema.safeParse({ prompt: 'q', messages: [{ role: 'user', content: 'q' }], answer: 'a' }).success).toBe(false);
    expect(taskLineSchema.safeParse({ answer: 'a' }).success).toBe(false);
    expect(taskLineSchema.safeParse({ messages: [{ role: 'system', content: 's' }], answer: 'a' }).success).toBe(false);
  });
});

describe('loadTask', () => {
  it('reads a folder or its task.json, both splits, prompts and chats', () => {
    const dir = folder({
      'task.json': header,
      'validation.jsonl': [
        { prompt: 'capital of France?', answer: 'Paris' },
        '',
        {
          messages: [
            { role: 'system', content: 'be brief' },
            { role: 'user', content: 'capital of Italy?' },
          ],
          answer: 'Rome',
        },
      ],
      'heldout.jsonl': [{ prompt: 'capital of Spain?', answer: 'Madrid' }],
    });
    for (const ref of [dir, path.join(dir, 'task.json')]) {
      const t = loadTask(ref, MODELS);
      expect(t.header.name).toBe('caps');
      expect(t.splits()).toEqual(['validation', 'heldout']);
      const v = t.split('validation').problems;
      expect(v.map((p) => [p.question, p.answer])).toEqual([
        ['capital of France?', 'Paris'],
        ['capital of Italy?', 'Rome'],
      ]);
      expect(chatOf(v[0])).toEqual([{ role: 'user', content: 'capital of France?' }]);
      expect(chatOf(v[1])).toHaveLength(2);
      expect(t.grade(' Rome ', v[1].answer)).toBe(true);
    }
  });

  it('names the file, line and key of a bad line', () => {
    const lines = (l: unknown) => folder({ 'task.json': header, 'validation.jsonl': [{ prompt: 'ok', answer: 'x' }, l] });
    const err = (dir: string) => () => loadTask(dir, MODELS);
    let dir = lines({ prompt: 'q' });
    expect(err(dir)).toThrow(`${path.join(dir, 'validation.jsonl')}:2: "answer":`);
    dir = lines({ prompt: 'q', answer: 'a', anwser: 'b' });
    expect(err(dir)).toThrow(/validation\.jsonl:2: unknown key "anwser"/);
    dir = lines({ messages: [{ role: 'robot', content: 'q' }], answer: 'a' });
    expect(err(dir)).toThrow(/validation\.jsonl:2: "messages\.0\.role":/);
    dir = lines('{"prompt": "q", "answer": "secret text"');
    expect(err(dir)).toThrow(/validation\.jsonl:2: not a JSON object/);
    expect(err(dir)).not.toThrow(/secret text/);
    dir = folder({ 'task.json': { name: 'n', grader: { kind: 'final-number' } }, 'heldout.jsonl': [{ prompt: 'q', answer: '1,5 apples' }] });
    expect(err(dir)).toThrow(/heldout\.jsonl:1: "answer": "1,5 apples" is not a number/);
  });

  it('names what is missing or malformed in the folder and its header', () => {
    expect(() => loadTask(path.join(tmp, 'nowhere'), MODELS)).toThrow(
      /no bundled task ".*nowhere" \(bundled: word-problems, multiplication\) and no file or folder at/,
    );
    expect(() => loadTask(folder({ 'validation.jsonl': [{ prompt: 'q', answer: 'a' }] }), MODELS)).toThrow(/has no task\.json/);
    expect(() => loadTask(folder({ 'task.json': header }), MODELS)).toThrow(/has neither validation\.jsonl nor heldout\.jsonl/);
    expect(() =>
      loadTask(folder({ 'task.json': { name: 'n', grader: { kind: 'regex', pattern: '[' } }, 'validation.jsonl': [{ prompt: 'q', answer: 'a' }] }), MODELS),
    ).toThrow(/task\.json: "grader\.pattern": not a JavaScript regular expression/);
    expect(() => loadTask(folder({ 'task.json': header, 'validation.jsonl': ['', ' '] }), MODELS)).toThrow(/validation\.jsonl: holds no problem/);
    const onlyHeldout = loadTask(folder({ 'task.json': header, 'heldout.jsonl': [{ prompt: 'q', answer: 'a' }] }), MODELS);
    expect(() => onlyHeldout.split('validation')).toThrow(/task "caps" \(.*\) has no validation split: no validation\.jsonl/);
  });

  it('defaults to the bundled word-problems folder, found from the package whatever the working directory', () => {
    const cwd = process.cwd();
    process.chdir(tmp);
    try {
      const t = loadTask(DEFAULT_TASK, 'nowhere');
      expect(t).toMatchObject({ header: { name: 'word-problems', grader: { kind: 'final-number' } }, source: 'bundled' });
      expect(t.splits()).toEqual(['validation', 'heldout']);
      expect(t.split('validation').file).toBe(path.join(cwd, 'examples/tasks/word-problems/validation.jsonl'));
      const [first] = t.split('validation').problems;
      expect(t.grade(`Some steps.\nThe answer is ${first.answer}.`, first.answer)).toBe(true);
      expect(t.grade(`Some steps.\nThe answer is ${Number(first.answer) + 1}.`, first.answer)).toBe(false);
      expect(bundledTasks().map((h) => [h.name, h.grader.kind])).toEqual([
        ['word-problems', 'final-number'],
        ['multiplication', 'regex'],
      ]);
    } finally {
      process.chdir(cwd);
    }
  });

  it('names the models folder when the multiplication task finds no split files there', () => {
    const t = loadTask('multiplication', tmp);
    expect(() => t.split('validation')).toThrow(
      new RegExp(`task "multiplication" reads its problems from the models folder's split files, and ${tmp} has no validation\\.json`),
    );
  });

  it('derives the bundled multiplication task from the bundled split files, problem for problem', () => {
    const t = loadTask('multiplication', MODELS);
    for (const split of ['validation', 'heldout'] as const) {
      const rows = loadSplit(MODELS, split).rows;
      expect(t.split(split).problems).toEqual(rows.map((r) => ({ question: r.question, answer: r.answer })));
    }
  });
});

// POST /admin/evaluate on a task file of another shape (regex-graded, chat and prompt lines) against a real listening server: the grade it reports, and a bad task refused by name.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { evaluateBoundsSchema, evaluateEventSchema, type EvaluationResult } from '../../shared/api/evaluate.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import type { IrDocument } from '../../shared/ir/irSchema.ts';
import { defaultParams } from '../../shared/ir/nodeRegistry.ts';
import { RIG_CATALOG } from '../reliability/irFixtures.ts';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-evaltask-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

/** A draft that keeps every token on small: its answers are small's, which the chat API gives too. */
function smallAloneIr(): IrDocument {
  const node = (id: string, type: 'start' | 'stay', y: number) => ({ id, type, params: { ...defaultParams(type), model: 'small' }, position: { x: 0, y } });
  const g = {
    schemaVersion: 1,
    kind: 'tokenrouter.graph',
    name: 'small-alone',
    nodes: [node('start', 'start', 0), node('stay', 'stay', 100)],
    edges: [],
  } as unknown as GraphDocument;
  const r = compileGraph(g, RIG_CATALOG);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return JSON.parse(JSON.stringify(r.ir)) as IrDocument;
}

/** small's greedy answer to a chat, through the OpenAI endpoint. */
async function answer(url: string, messages: { role: string; content: string }[], maxTokens: number): Promise<string> {
  const res = await post(`${url}/v1/chat/completions`, { model: 'small', messages, max_tokens: maxTokens, temperature: 0 });
  expect(res.status).toBe(200);
  return ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0].message.content;
}

function writeTask(name: string, header: unknown, lines: unknown[]): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'task.json'), JSON.stringify(header));
  fs.writeFileSync(path.join(dir, 'validation.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return dir;
}

async function result(res: Response): Promise<EvaluationResult> {
  expect(res.status).toBe(200);
  const lines = (await res.text())
    .split('\n')
    .filter(Boolean)
    .map((l) => evaluateEventSchema.parse(JSON.parse(l)));
  const last = lines.at(-1)!;
  if (last.type !== 'result') throw new Error(`ended with ${JSON.stringify(last)}`);
  return last.result;
}

describe('evaluating a draft on a task file', () => {
  it('grades by the regex the task names: right where the reference is the captured group, wrong elsewhere', async () => {
    t = await startTestServer({ latency: { small: 0, large: 0 } });
    const N = 12;
    const MAX = 6;
    // half the problems as a chat, half as a prompt; the simulated model answers in digits
    const chats = Array.from({ length: N }, (_, i) => [{ role: 'user', content: `${10 + i}*${3 + i}` }]);
    const outputs = await Promise.all(chats.map((m) => answer(t!.url, m, MAX)));
    expect(outputs.every((o) => /^\d{6}$/.test(o))).toBe(true);
    // the reference is the answer's third and fourth digits on even problems, a pair it did not write on odd ones
    const wrong = (s: string) => `${s[0]}${(Number(s[1]) + 1) % 10}`;
    const lines = chats.map((messages, i) => {
      const pair = outputs[i].slice(2, 4);
      const ref = i % 2 === 0 ? pair : wrong(pair);
      return i < N / 2 ? { messages, answer: ref } : { prompt: messages[0].content, answer: ref };
    });
    const dir = writeTask('digits', { name: 'digits-3-4', grader: { kind: 'regex', pattern: '^\\d\\d(?<answer>\\d\\d)' } }, lines);

    const bounds = evaluateBoundsSchema.parse(await (await fetch(`${t.url}/admin/evaluate/bounds?task=${encodeURIComponent(dir)}`)).json());
    expect(bounds).toMatchObject({ task: 'digits-3-4', problems: N, defaultProblems: N });
    const r = await result(await post(`${t.url}/admin/evaluate`, { ir: smallAloneIr(), task: dir, problems: N, concurrency: 3, maxTokens: MAX }));
    expect(r).toMatchObject({ task: 'digits-3-4', grader: 'regex', problems: N, correct: N / 2, accuracy: 0.5, failed: 0 });
    expect(r.tokenShare).toEqual({ small: 1 });
    // the same model's answers under the bundled multiplication task's grader (after the last "=") are all wrong: the task decides the grade
    const bundled = await result(
      await post(`${t.url}/admin/evaluate`, { ir: smallAloneIr(), task: 'multiplication', problems: N, concurrency: 3, maxTokens: MAX }),
    );
    expect(bundled).toMatchObject({ task: 'multiplication', grader: 'regex', correct: 0 });
  });

  it('refuses a bad task with a 400 naming the file, the line and the key, before any request runs', async () => {
    t = await startTestServer({ latency: { small: 0, large: 0 } });
    const refused = async (res: Response) => {
      expect(res.status).toBe(400);
      return ((await res.json()) as { error: { message: string; param: string | null; code: string } }).error;
    };
    const missing = path.join(tmp, 'no-such-task');
    expect(await refused(await post(`${t.url}/admin/evaluate`, { ir: smallAloneIr(), task: missing }))).toMatchObject({
      code: 'invalid_request',
      param: 'task',
      message: expect.stringContaining(`no bundled task "${missing}" (bundled: word-problems, multiplication) and no file or folder at ${missing}`),
    });
    const dir = writeTask('bad-line', { name: 'bad', grader: { kind: 'choice' } }, [
      { prompt: '1*2', answer: 'A' },
      { prompt: '1*3', answer: 'G' },
    ]);
    const e = await refused(await post(`${t.url}/admin/evaluate`, { model: 'small', task: dir }));
    expect(e).toMatchObject({ param: 'task', message: `${path.join(dir, 'validation.jsonl')}:2: "answer": "G" is not one of the letters A, B, C, D, E` });
    expect(await refused(await fetch(`${t.url}/admin/evaluate/bounds?task=${encodeURIComponent(dir)}`))).toMatchObject({
      param: 'task',
      message: expect.stringMatching(/validation\.jsonl:2: "answer"/),
    });
    expect(await refused(await post(`${t.url}/admin/evaluate`, { ir: smallAloneIr(), task: ' ' }))).toMatchObject({ param: 'task' });
    expect(t.service.cluster.activeCount).toBe(0);
  });
});

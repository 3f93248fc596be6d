// Every EOS id and stop_token_ids end an answer; top_k / min_p / stop_token_ids checked; generation_config.json gives the defaults (bundled models, edited copies).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { planRequest } from '../../runtime/http/openai/requestPlan.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { tinyGolden, tinyModelDir } from '../support/tinyFamily.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-ends-'));
let service: TokenRouterService;
let srv: RunningServer;

// The small model's greedy answer to golden row 0, and a token of it (not its first) made a second EOS id.
const row = tinyGolden('small').rows[0];
const cut = row.output_ids.findIndex((t, k) => k > 0 && t !== 2 && !row.output_ids.slice(0, k).includes(t));
const SECOND_EOS = row.output_ids[cut];
const LARGE_DEFAULTS = { do_sample: true, temperature: 0.7, top_p: 0.9, top_k: 5, min_p: 0.05 };

function copy(name: string, edit: (dir: string) => void): string {
  const dir = path.join(tmp, name);
  fs.cpSync(tinyModelDir(name), dir, { recursive: true });
  edit(dir);
  return dir;
}
const editJson = (file: string, f: (j: Record<string, unknown>) => void) => {
  const j = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  f(j);
  fs.writeFileSync(file, JSON.stringify(j));
};

beforeAll(async () => {
  // config.json keeps 2; generation_config.json lists both (as Llama 3 and Qwen3 do)
  const small = copy('small', (d) => editJson(path.join(d, 'generation_config.json'), (j) => (j.eos_token_id = [2, SECOND_EOS])));
  const large = copy('large', (d) => editJson(path.join(d, 'generation_config.json'), (j) => Object.assign(j, LARGE_DEFAULTS)));
  const config = parseServerConfig({
    port: 0,
    dataDir: path.join(tmp, 'data'),
    memory: { budgetMiB: 1024 },
    models: [
      { name: 'small', path: small },
      { name: 'large', path: large },
    ],
  });
  service = await TokenRouterService.start(config);
  srv = await startServer(service, 0, '127.0.0.1');
}, 120_000);
afterAll(async () => {
  await srv?.close();
  await service?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

interface Answer {
  status: number;
  text: string;
  finish: string;
  tokens: number;
  error?: { param: string; message: string };
}

async function ask(kind: 'chat' | 'completion', body: Record<string, unknown>, stream: boolean): Promise<Answer> {
  const url = `${srv.url}/v1/${kind === 'chat' ? 'chat/completions' : 'completions'}`;
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }),
  });
  if (r.status !== 200 || !stream) {
    const j = (await r.json()) as {
      error?: Answer['error'];
      choices?: { text?: string; message?: { content: string }; finish_reason: string }[];
      usage?: { completion_tokens: number };
    };
    const c = j.choices?.[0];
    return {
      status: r.status,
      text: c ? (c.text ?? c.message!.content) : '',
      finish: c?.finish_reason ?? '',
      tokens: j.usage?.completion_tokens ?? -1,
      error: j.error,
    };
  }
  let text = '';
  let finish = '';
  let tokens = -1;
  for (const line of (await r.text()).split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const j = JSON.parse(line.slice(6)) as {
      choices: { text?: string; delta?: { content?: string }; finish_reason: string | null }[];
      usage?: { completion_tokens: number };
    };
    for (const c of j.choices) {
      text += c.text ?? c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (j.usage) tokens = j.usage.completion_tokens;
  }
  return { status: 200, text, finish, tokens };
}

describe('every end', () => {
  it('a second EOS id from generation_config.json ends the answer with "stop", its text not shown, unary and streamed', async () => {
    expect(cut).toBeGreaterThan(0);
    expect(service.info('small')!.eosTokenIds).toEqual([2, SECOND_EOS]);
    const before = service.tokenizer.decode(row.output_ids.slice(0, cut));
    for (const stream of [false, true]) {
      const a = await ask('completion', { model: 'small', prompt: row.input_ids, max_tokens: 40, temperature: 0 }, stream);
      expect([a.status, a.text, a.finish, a.tokens]).toEqual([200, before, 'stop', cut]);
    }
    // ignore_eos bans both ids: the answer runs to max_tokens and never holds the second one
    const held = await ask('completion', { model: 'small', prompt: row.input_ids, max_tokens: 40, temperature: 0, ignore_eos: true }, false);
    expect([held.finish, held.tokens]).toEqual(['length', 40]);
    expect(held.text.startsWith(before)).toBe(true);
    expect(held.text).not.toContain(service.tokenizer.decode([SECOND_EOS]));
  });

  it('stop_token_ids end an answer on chat and completions, unary and streamed; below min_tokens they are left out of the draw', async () => {
    // the large model keeps one EOS id: a token of its greedy answer is made a stop id by the request
    const free = await ask('completion', { model: 'large', prompt: row.input_ids, max_tokens: 12, temperature: 0, ignore_eos: true }, false);
    const ids = service.tokenizer.encode(free.text, false);
    const k = ids.findIndex((t, i) => i > 0 && !ids.slice(0, i).includes(t));
    const stopId = ids[k];
    for (const stream of [false, true]) {
      const a = await ask('completion', { model: 'large', prompt: row.input_ids, max_tokens: 12, temperature: 0, stop_token_ids: [stopId] }, stream);
      expect([a.text, a.finish, a.tokens]).toEqual([service.tokenizer.decode(ids.slice(0, k)), 'stop', k]);
      const chatFree = await ask(
        'chat',
        { model: 'large', messages: [{ role: 'user', content: '436*40' }], max_tokens: 12, temperature: 0, ignore_eos: true },
        stream,
      );
      const c = service.tokenizer.encode(chatFree.text, false);
      const chat = await ask(
        'chat',
        { model: 'large', messages: [{ role: 'user', content: '436*40' }], max_tokens: 12, temperature: 0, stop_token_ids: [c[1]] },
        stream,
      );
      expect([chat.finish, chat.text]).toEqual(['stop', service.tokenizer.decode(c.slice(0, c.indexOf(c[1])))]);
    }
    const held = await ask(
      'completion',
      { model: 'large', prompt: row.input_ids, max_tokens: 12, temperature: 0, stop_token_ids: [stopId], min_tokens: 12 },
      false,
    );
    expect([held.finish, held.tokens]).toEqual(['length', 12]);
    expect(service.tokenizer.encode(held.text, false)).not.toContain(stopId);
  });

  it('bad top_k, min_p and stop_token_ids are 400s naming the parameter', async () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ top_k: -2 }, 'top_k'],
      [{ top_k: 1.5 }, 'top_k'],
      [{ top_k: 'all' }, 'top_k'],
      [{ min_p: 1.5 }, 'min_p'],
      [{ min_p: -0.1 }, 'min_p'],
      [{ stop_token_ids: [1, 30] }, 'stop_token_ids'],
      [{ stop_token_ids: [-1] }, 'stop_token_ids'],
      [{ stop_token_ids: 3 }, 'stop_token_ids'],
    ];
    for (const kind of ['chat', 'completion'] as const) {
      for (const [extra, param] of bad) {
        const body =
          kind === 'chat'
            ? { model: 'small', messages: [{ role: 'user', content: '1*2' }], max_tokens: 4, ...extra }
            : { model: 'small', prompt: 'Q: 1*2=\nA: ', max_tokens: 4, ...extra };
        const a = await ask(kind, body, false);
        // an item of a list is named by its index (stop_token_ids.0)
        expect([a.status, a.error?.param?.split('.')[0]], JSON.stringify(extra)).toEqual([400, param]);
      }
    }
  });
});

describe('sampling parameters and generation_config.json defaults', () => {
  const plan = (body: Record<string, unknown>) =>
    planRequest(service, 'completion', { prompt: 'Q: 1*2=\nA: ', max_tokens: 4, ...body } as never, undefined).jobs[0].params.sampling;

  it('top_k and min_p reach SamplingParams; -1 and 0 mean no cut', () => {
    expect(plan({ model: 'small', top_k: 3, min_p: 0.2, temperature: 1 })).toMatchObject({ topK: 3, minP: 0.2, temperature: 1 });
    expect(plan({ model: 'small', top_k: -1, temperature: 1 }).topK).toBe(0);
    expect(plan({ model: 'small', top_k: 0, min_p: 0, temperature: 1 })).toMatchObject({ topK: 0 });
    expect(plan({ model: 'small', min_p: 0, temperature: 1 }).minP).toBeUndefined();
  });

  it('unset parameters come from the folder; do_sample false is greedy; what the request sets wins', () => {
    expect(plan({ model: 'large' })).toMatchObject({ temperature: 0.7, topP: 0.9, topK: 5, minP: 0.05 });
    expect(plan({ model: 'large', temperature: 0.2, top_k: -1, top_p: 1, min_p: 0 })).toMatchObject({ temperature: 0.2, topK: 0, topP: 1 });
    expect(plan({ model: 'large', temperature: 0.2, top_k: -1, top_p: 1, min_p: 0 }).minP).toBeUndefined();
    expect(plan({ model: 'small' })).toMatchObject({ temperature: 0, topP: 1, topK: 0 });
    expect(plan({ model: 'small', temperature: 0.9 })).toMatchObject({ temperature: 0.9 });
  });

  it("an algorithm over models that disagree takes its entry model's defaults", () => {
    for (const name of ['r-stitch', 'query-router']) {
      const { algorithm } = service.algorithms.resolve(name);
      const entry = algorithm.models[algorithm.entry - 1];
      expect(plan({ model: name })).toMatchObject(entry === 'large' ? { temperature: 0.7, topK: 5 } : { temperature: 0, topK: 0 });
    }
    // R-Stitch starts every answer on the small model: greedy, whatever the large one's folder says
    expect(plan({ model: 'r-stitch' })).toMatchObject({ temperature: 0, topP: 1, topK: 0 });
  });

  it('seeded draws with the folder defaults equal the same parameters set by the request', async () => {
    const prompt = row.input_ids;
    const byDefault = await ask('completion', { model: 'large', prompt, max_tokens: 16, seed: 11, ignore_eos: true }, false);
    const spelled = await ask(
      'completion',
      { model: 'large', prompt, max_tokens: 16, seed: 11, ignore_eos: true, temperature: 0.7, top_p: 0.9, top_k: 5, min_p: 0.05 },
      false,
    );
    expect(byDefault.text).toBe(spelled.text);
    expect(byDefault.tokens).toBe(16);
  });
});

// OpenAI parameters on a real listening server (simulated models): each unsupported one refused with a 400 naming it, the structural ones (n, prompt arrays, models/{id}) honoured.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> & Partial<ErrorBody>; text: string }> {
  const res = await fetch(t.url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text.startsWith('data:') ? '{}' : text) as Record<string, unknown>, text };
}

const chat = (extra: Record<string, unknown>) => ({ model: 'small', messages: [{ role: 'user', content: '12*3' }], max_tokens: 4, ...extra });
const cmpl = (extra: Record<string, unknown>) => ({ model: 'small', prompt: 'Q: 12*3=\nA: ', max_tokens: 4, ...extra });

interface Refusal {
  name: string;
  path: 'chat' | 'completion';
  body: Record<string, unknown>;
  param: string;
  message?: RegExp;
  /** The top-level key to drop for the request to succeed, when param names one inside it. */
  field?: string;
}

const fn = { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } };

const REFUSED: Refusal[] = [
  { name: 'tools on a model without toolCallParser', path: 'chat', body: chat({ tools: [fn] }), param: 'tools', message: /toolCallParser/ },
  { name: 'tool_choice auto without tools', path: 'chat', body: chat({ tool_choice: 'auto' }), param: 'tool_choice', message: /needs tools/ },
  {
    name: 'tool_choice naming a function without tools',
    path: 'chat',
    body: chat({ tool_choice: { type: 'function', function: { name: 'f' } } }),
    param: 'tool_choice',
  },
  {
    name: 'tool of an unknown type',
    path: 'chat',
    body: chat({ tools: [{ ...fn, type: 'retrieval' }] }),
    param: 'tools.0.type',
    message: /unknown tool type "retrieval"/,
    field: 'tools',
  },
  { name: 'functions', path: 'chat', body: chat({ functions: [fn.function] }), param: 'functions' },
  { name: 'function_call', path: 'chat', body: chat({ function_call: 'auto' }), param: 'function_call' },
  {
    name: 'response_format json_schema with an invalid schema',
    path: 'chat',
    body: chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'nope' } } } }),
    param: 'response_format.json_schema.schema',
    message: /does not compile/,
    field: 'response_format',
  },
  {
    name: 'response_format of an unknown type',
    path: 'chat',
    body: chat({ response_format: { type: 'yaml' } }),
    param: 'response_format.type',
    message: /json_schema/,
    field: 'response_format',
  },
  { name: 'guided_json not JSON', path: 'completion', body: cmpl({ guided_json: '{"type":' }), param: 'guided_json', message: /not JSON/ },
  {
    name: 'guided_regex that does not compile',
    path: 'completion',
    body: cmpl({ guided_regex: '(a' }),
    param: 'guided_regex',
    message: /regex does not compile/,
  },
  {
    name: 'guided_grammar that does not compile',
    path: 'chat',
    body: chat({ guided_grammar: 'root ::= "a' }),
    param: 'guided_grammar',
    message: /EBNF grammar does not compile/,
  },
  {
    name: 'structured_outputs.json that does not compile',
    path: 'completion',
    body: cmpl({ structured_outputs: { json: { type: 'object', properties: { a: { type: 'integer', minimum: 'x' } } } } }),
    param: 'structured_outputs.json',
    field: 'structured_outputs',
  },
  {
    name: 'two constraints at once',
    path: 'chat',
    body: chat({ guided_choice: ['12', '34'], guided_regex: '1+' }),
    param: 'guided_choice',
    message: /both constrain/,
  },
  {
    name: 'two keys of structured_outputs',
    path: 'completion',
    body: cmpl({ structured_outputs: { regex: 'a+', choice: ['a'] } }),
    param: 'structured_outputs.choice',
    message: /both constrain/,
    field: 'structured_outputs',
  },
  { name: 'tool_choice that is no choice', path: 'chat', body: chat({ tool_choice: 'always' }), param: 'tool_choice', message: /"none", "auto", "required"/ },
  {
    name: 'chat_template_kwargs setting messages',
    path: 'chat',
    body: chat({ chat_template_kwargs: { messages: [] } }),
    param: 'chat_template_kwargs.messages',
    field: 'chat_template_kwargs',
  },
  { name: 'frequency_penalty 5 (out of range)', path: 'chat', body: chat({ frequency_penalty: 5 }), param: 'frequency_penalty' },
  { name: 'presence_penalty -2.5 (out of range)', path: 'completion', body: cmpl({ presence_penalty: -2.5 }), param: 'presence_penalty' },
  { name: 'logit_bias 101', path: 'chat', body: chat({ logit_bias: { '5': 101 } }), param: 'logit_bias.5' },
  { name: 'logit_bias key not a token id', path: 'completion', body: cmpl({ logit_bias: { abc: 1 } }), param: 'logit_bias.abc' },
  {
    name: 'logit_bias token outside the vocabulary',
    path: 'completion',
    body: cmpl({ logit_bias: { '999': 1 } }),
    param: 'logit_bias',
    message: /outside the vocabulary/,
  },
  { name: 'best_of 2', path: 'completion', body: cmpl({ best_of: 2 }), param: 'best_of' },
  { name: 'suffix', path: 'completion', body: cmpl({ suffix: ' end' }), param: 'suffix', message: /fill-in-the-middle/ },
  { name: 'echo with logprobs', path: 'completion', body: cmpl({ echo: true, logprobs: 1 }), param: 'echo' },
  { name: 'stream_options without stream (chat)', path: 'chat', body: chat({ stream_options: { include_usage: true } }), param: 'stream_options' },
  {
    name: 'stream_options with stream: false',
    path: 'completion',
    body: cmpl({ stream: false, stream_options: { include_usage: true } }),
    param: 'stream_options',
  },
  { name: 'top_logprobs without logprobs', path: 'chat', body: chat({ top_logprobs: 3 }), param: 'top_logprobs' },
  { name: 'top_logprobs 21', path: 'chat', body: chat({ logprobs: true, top_logprobs: 21 }), param: 'top_logprobs' },
  { name: 'completions logprobs 6', path: 'completion', body: cmpl({ logprobs: 6 }), param: 'logprobs' },
  { name: 'completions logprobs true (chat form)', path: 'completion', body: cmpl({ logprobs: true }), param: 'logprobs' },
  { name: 'unknown top-level key', path: 'chat', body: chat({ temprature: 0.5 }), param: 'temprature', message: /unsupported parameter: temprature/ },
  { name: 'chat-only key on completions', path: 'completion', body: cmpl({ top_logprobs: 2 }), param: 'top_logprobs' },
  { name: 'tools on completions', path: 'completion', body: cmpl({ tools: [fn] }), param: 'tools' },
  { name: 'modalities', path: 'chat', body: chat({ modalities: ['text', 'audio'] }), param: 'modalities' },
  {
    name: 'role tool without tool_call_id',
    path: 'chat',
    body: chat({
      messages: [
        { role: 'user', content: '1*2' },
        { role: 'tool', content: '2' },
      ],
    }),
    param: 'messages.1.tool_call_id',
    message: /tool_call_id/,
  },
  {
    name: 'role function',
    path: 'chat',
    body: chat({
      messages: [
        { role: 'user', content: '1*2' },
        { role: 'function', content: '2', name: 'f' },
      ],
    }),
    param: 'messages.1.role',
    message: /deprecated/,
  },
  {
    name: 'tool_calls on a user message',
    path: 'chat',
    body: chat({ messages: [{ role: 'user', content: '1*2', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] }] }),
    param: 'messages.0.tool_calls',
  },
  {
    name: 'assistant tool_calls arguments not JSON',
    path: 'chat',
    body: chat({
      messages: [
        { role: 'user', content: '1*2' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{x' } }] },
      ],
    }),
    param: 'messages.1.tool_calls.0.function.arguments',
  },
  { name: 'user content null', path: 'chat', body: chat({ messages: [{ role: 'user', content: null }] }), param: 'messages.0.content' },
  {
    name: 'image content part',
    path: 'chat',
    body: chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }),
    param: 'messages.0.content',
  },
  { name: 'n over the cap with prompt arrays', path: 'completion', body: cmpl({ prompt: ['a', 'b', 'c'], n: 50 }), param: 'n' },
];

describe('refusals say what is wrong once, without repeating the parameter (issue 35)', () => {
  it.each([
    ['stop with 5 strings', 'chat', chat({ stop: ['a', 'b', 'c', 'd', 'e'] }), 'stop: at most 4 strings, got 5'],
    ['stop of the wrong type', 'completion', cmpl({ stop: 7 }), 'stop: must be a string or a list of strings'],
    [
      'tools',
      'chat',
      chat({ tools: [fn] }),
      'model "small" has no toolCallParser in the server config, so its tool calls cannot be read back (tool_choice "none" is accepted)',
    ],
    [
      'response_format json_schema without a name',
      'chat',
      chat({ response_format: { type: 'json_schema', json_schema: { schema: {} } } }),
      'response_format.json_schema.name: Invalid input: expected string, received undefined',
    ],
    ['top_logprobs alone', 'chat', chat({ top_logprobs: 2 }), 'top_logprobs: needs logprobs: true'],
    ['stream_options unstreamed', 'completion', cmpl({ stream_options: { include_usage: true } }), 'stream_options: only allowed with stream: true'],
    ['role bot', 'chat', chat({ messages: [{ role: 'bot', content: 'hi' }] }), 'messages.0.role: must be one of system, developer, user, assistant, tool'],
  ] as const)('%s', async (_name, path, body, message) => {
    const r = await post(path === 'chat' ? '/v1/chat/completions' : '/v1/completions', body);
    expect(r.status).toBe(400);
    expect(r.json.error?.message).toBe(message);
  });

  it('4 stop strings are accepted', async () => {
    expect((await post('/v1/chat/completions', chat({ stop: ['a', 'b', 'c', 'd'] }))).status).toBe(200);
  });
});

describe('unsupported parameters: 400 naming the parameter', () => {
  it.each(REFUSED)('$name', async (c) => {
    const r = await post(c.path === 'chat' ? '/v1/chat/completions' : '/v1/completions', c.body);
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    expect(r.json.error?.type).toBe('invalid_request_error');
    expect(r.json.error?.param, r.text.slice(0, 300)).toBe(c.param);
    if (c.message) expect(r.json.error?.message).toMatch(c.message);
  });

  it('the same requests without the refused parameter succeed (the refusal is about it alone)', async () => {
    for (const c of REFUSED.slice(0, 14)) {
      const { [c.field ?? c.param]: _gone, ...rest } = c.body;
      const r = await post(c.path === 'chat' ? '/v1/chat/completions' : '/v1/completions', rest);
      expect(r.status, `${c.name}: ${r.text.slice(0, 200)}`).toBe(200);
    }
  });
});

describe('what OpenAI accepts and means nothing here is accepted', () => {
  it.each([
    ['response_format text', chat({ response_format: { type: 'text' } })],
    ['tool_choice none', chat({ tool_choice: 'none' })],
    ['tools with tool_choice none on a model without toolCallParser', chat({ tools: [fn], tool_choice: 'none', parallel_tool_calls: true })],
    [
      'a tool round trip in the messages',
      chat({
        messages: [
          { role: 'user', content: '1*2' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          { role: 'tool', content: '2', tool_call_id: 'c1' },
        ],
      }),
    ],
    ['chat_template_kwargs', chat({ chat_template_kwargs: { enable_thinking: false } })],
    ['tools empty', chat({ tools: [] })],
    ['best_of 1', cmpl({ best_of: 1 })],
    ['empty suffix', cmpl({ suffix: '' })],
    [
      'nulls for optional fields',
      chat({ tools: null, response_format: null, logprobs: null, frequency_penalty: null, logit_bias: null, stop: null, n: null, seed: null }),
    ],
    ['user, seed, n: 1', chat({ user: 'u-1', seed: 3, n: 1 })],
    ['logprobs false', chat({ logprobs: false })],
    ['penalties 0 and an empty logit_bias', chat({ frequency_penalty: 0, presence_penalty: 0, logit_bias: {} })],
    [
      'assistant content null and an assistant turn without content',
      chat({ messages: [{ role: 'user', content: '1*2' }, { role: 'assistant', content: null }, { role: 'assistant' }, { role: 'user', content: '3*4' }] }),
    ],
    [
      'assistant refusal null, tool_calls empty',
      chat({
        messages: [
          { role: 'user', content: '1*2' },
          { role: 'assistant', content: '2', refusal: null, tool_calls: [] },
          { role: 'user', content: '3*4' },
        ],
      }),
    ],
  ])('%s', async (_name, body: Record<string, unknown>) => {
    const r = await post('messages' in body ? '/v1/chat/completions' : '/v1/completions', body);
    expect(r.status, r.text.slice(0, 300)).toBe(200);
  });

  it('assistant content null renders as an empty turn: the prompt differs from leaving the turn out', async () => {
    const base = [{ role: 'user', content: '1*2' }];
    const a = await post('/v1/chat/completions', chat({ messages: base }));
    const b = await post('/v1/chat/completions', chat({ messages: [...base, { role: 'assistant', content: null }, { role: 'user', content: '1*2' }] }));
    const pa = (a.json.usage as { prompt_tokens: number }).prompt_tokens;
    const pb = (b.json.usage as { prompt_tokens: number }).prompt_tokens;
    expect(pb).toBeGreaterThan(2 * pa - 2);
  });
});

interface Choice {
  index: number;
  text?: string;
  message?: { content: string };
  finish_reason: string;
  tokenrouter?: { tokens_by_model: Record<string, number> };
}

describe('n, prompt arrays, echo', () => {
  it('n = 3 gives three choices indexed 0..2 and usage sums their tokens', async () => {
    const r = await post('/v1/chat/completions', chat({ n: 3, max_tokens: 5, seed: 1 }));
    expect(r.status, r.text).toBe(200);
    const choices = r.json.choices as Choice[];
    expect(choices.map((c) => c.index)).toEqual([0, 1, 2]);
    const usage = r.json.usage as { prompt_tokens: number; completion_tokens: number };
    expect(usage.completion_tokens).toBe(15);
    const one = await post('/v1/chat/completions', chat({ max_tokens: 5, seed: 1 }));
    expect(usage.prompt_tokens).toBe((one.json.usage as { prompt_tokens: number }).prompt_tokens);
    // choice 0 keeps the request's seed: it is the n = 1 answer
    expect(choices[0].message!.content).toBe((one.json.choices as Choice[])[0].message!.content);
    for (const c of choices) expect(Object.values(c.tokenrouter!.tokens_by_model).reduce((a, b) => a + b, 0)).toBe(5);
  });

  it('several text prompts: one choice each, in order, and index = prompt * n + j', async () => {
    const prompts = ['Q: 1*2=\nA: ', 'Q: 33*4=\nA: ', 'Q: 9*9=\nA: '];
    const single = await Promise.all(prompts.map((p) => post('/v1/completions', cmpl({ prompt: p, max_tokens: 6, temperature: 0 }))));
    const r = await post('/v1/completions', cmpl({ prompt: prompts, max_tokens: 6, temperature: 0, n: 2 }));
    expect(r.status, r.text).toBe(200);
    const choices = r.json.choices as Choice[];
    expect(choices.map((c) => c.index)).toEqual([0, 1, 2, 3, 4, 5]);
    prompts.forEach((_, i) => {
      const want = (single[i].json.choices as Choice[])[0].text;
      expect(choices[2 * i].text).toBe(want);
      expect(choices[2 * i + 1].text).toBe(want); // temperature 0: every choice of a prompt is the greedy one
    });
    const usage = r.json.usage as { prompt_tokens: number; completion_tokens: number };
    expect(usage.prompt_tokens).toBe(single.reduce((a, s) => a + (s.json.usage as { prompt_tokens: number }).prompt_tokens, 0));
    expect(usage.completion_tokens).toBe(36);
  });

  it('token-id prompts: one list, and a list of lists', async () => {
    const ids = [
      [1, 20, 10, 5],
      [1, 20, 11, 6],
    ];
    const a = await post('/v1/completions', cmpl({ prompt: ids[0], temperature: 0 }));
    const b = await post('/v1/completions', cmpl({ prompt: ids[1], temperature: 0 }));
    const both = await post('/v1/completions', cmpl({ prompt: ids, temperature: 0 }));
    expect(both.status, both.text).toBe(200);
    const choices = both.json.choices as Choice[];
    expect(choices.map((c) => c.text)).toEqual([(a.json.choices as Choice[])[0].text, (b.json.choices as Choice[])[0].text]);
    expect((both.json.usage as { prompt_tokens: number }).prompt_tokens).toBe(8);
    const bad = await post(
      '/v1/completions',
      cmpl({
        prompt: [
          [1, 2],
          [1, 99],
        ],
      }),
    );
    expect(bad.status).toBe(400);
    expect(bad.json.error?.param).toBe('prompt.1');
  });

  it('echo puts the prompt before the completion', async () => {
    const prompt = 'Q: 7*8=\nA: ';
    const plain = await post('/v1/completions', cmpl({ prompt, temperature: 0 }));
    const echoed = await post('/v1/completions', cmpl({ prompt, temperature: 0, echo: true }));
    expect((echoed.json.choices as Choice[])[0].text).toBe(prompt + (plain.json.choices as Choice[])[0].text);
  });

  it('streamed n = 2 over two prompts: every chunk names its choice, each choice finishes once, usage sums', async () => {
    const res = await fetch(`${t.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(
        cmpl({
          prompt: ['Q: 1*2=\nA: ', 'Q: 5*5=\nA: '],
          n: 2,
          max_tokens: 7,
          temperature: 0,
          stream: true,
          stream_options: { include_usage: true },
          echo: true,
        }),
      ),
    });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .split('\n\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6));
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: Choice[]; usage?: { completion_tokens: number } });
    const text = new Map<number, string>();
    const finishes = new Map<number, number>();
    for (const c of chunks) {
      for (const ch of c.choices) {
        text.set(ch.index, (text.get(ch.index) ?? '') + (ch.text ?? ''));
        if (ch.finish_reason) finishes.set(ch.index, (finishes.get(ch.index) ?? 0) + 1);
      }
    }
    expect([...finishes.entries()].sort()).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
    expect(text.get(0)!.startsWith('Q: 1*2=\nA: ')).toBe(true);
    expect(text.get(2)!.startsWith('Q: 5*5=\nA: ')).toBe(true);
    expect(text.get(0)).toBe(text.get(1));
    expect(text.get(0)!.length).toBe('Q: 1*2=\nA: '.length + 7);
    expect(chunks.at(-1)!.usage!.completion_tokens).toBe(28);
  });
});

describe('models', () => {
  it('GET /v1/models/{id} for a served model and an algorithm; 404 model_not_found otherwise', async () => {
    for (const id of ['small', 'r-stitch']) {
      const res = await fetch(`${t.url}/v1/models/${id}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id, object: 'model', owned_by: 'tokenrouter' });
    }
    const res = await fetch(`${t.url}/v1/models/gpt-9`);
    expect(res.status).toBe(404);
    const j = (await res.json()) as ErrorBody;
    expect(j.error).toMatchObject({ code: 'model_not_found', param: 'model', type: 'invalid_request_error' });
  });

  it('a request naming an unknown model: 404 model_not_found (unary and streamed)', async () => {
    for (const body of [chat({ model: 'gpt-9' }), cmpl({ model: 'gpt-9', stream: true })] as Record<string, unknown>[]) {
      const r = await post('messages' in body ? '/v1/chat/completions' : '/v1/completions', body);
      expect(r.status).toBe(404);
      expect(r.json.error?.code).toBe('model_not_found');
      expect(r.json.error?.param).toBe('model');
    }
  });
});

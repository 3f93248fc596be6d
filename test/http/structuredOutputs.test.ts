// Structured outputs and required tool calls on a real-shaped Qwen3 (random weights: only the grammar makes the answer valid), through the official openai client.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-structured-'));
let service: TokenRouterService;
let server: RunningServer;
let client: OpenAI;

beforeAll(async () => {
  const dir = realShapeFolder('qwen3-tiny').dir;
  service = await TokenRouterService.start(
    parseServerConfig({
      port: 0,
      dataDir: tmp,
      memory: { budgetMiB: 2048 },
      limits: { maxTokens: 400 },
      models: [{ name: 'small', path: dir, toolCallParser: 'hermes' }],
    }),
  );
  server = await startServer(service, 0, '127.0.0.1');
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
}, 300_000);
afterAll(async () => {
  await server?.close();
  await service?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const Trip = z.object({
  city: z.enum(['Paris', 'Oslo', 'Lima']),
  days: z.number().int().min(1).max(9),
  pack: z.array(z.enum(['coat', 'hat'])).max(2),
  ok: z.boolean(),
});

describe('response_format json_schema', () => {
  it('chat.completions.parse with zodResponseFormat gives an object of the schema (seeds 1..3)', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.parse({
        model: 'small',
        messages: [{ role: 'user', content: 'Plan a trip.' }],
        response_format: zodResponseFormat(Trip, 'trip'),
        max_tokens: 400,
        temperature: 1,
        seed,
      });
      expect(r.choices[0].finish_reason, r.choices[0].message.content ?? '').toBe('stop');
      expect(Trip.parse(r.choices[0].message.parsed)).toEqual(r.choices[0].message.parsed);
    }
  }, 120_000);

  it("streamed, n = 2: each choice's text parses as the schema", async () => {
    const parts = ['', ''];
    for await (const c of await client.chat.completions.create({
      model: 'small',
      messages: [{ role: 'user', content: 'Plan.' }],
      response_format: zodResponseFormat(Trip, 'trip'),
      max_tokens: 400,
      n: 2,
      seed: 9,
      stream: true,
    })) {
      for (const ch of c.choices) parts[ch.index] += ch.delta.content ?? '';
    }
    for (const p of parts) expect(Trip.safeParse(JSON.parse(p)).success, p).toBe(true);
  }, 120_000);

  it('guided_choice and guided_regex on completions', async () => {
    const choice = await client.completions.create({
      model: 'small',
      prompt: 'Pick:',
      max_tokens: 20,
      seed: 4,
      guided_choice: ['alpha', 'beta gamma'],
    } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(['alpha', 'beta gamma']).toContain(choice.choices[0].text);
    const regex = await client.completions.create({
      model: 'small',
      prompt: 'Date:',
      max_tokens: 30,
      seed: 5,
      guided_regex: '20[0-9]{2}-(0[1-9]|1[0-2])',
    } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(regex.choices[0].text).toMatch(/^20[0-9]{2}-(0[1-9]|1[0-2])$/);
  }, 120_000);

  it('without a constraint the same model writes no JSON (the grammar is what makes it valid)', async () => {
    const r = await client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'Plan a trip.' }], max_tokens: 40, seed: 1 });
    expect(() => Trip.parse(JSON.parse(r.choices[0].message.content ?? ''))).toThrow();
  }, 60_000);
});

describe('tool_choice required, then auto: a round trip', () => {
  const tools: OpenAI.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, unit: { type: 'string', enum: ['C', 'F'] } },
          required: ['city', 'unit'],
          additionalProperties: false,
        },
      },
    },
    {
      type: 'function',
      function: {
        name: 'get_time',
        parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['CET', 'UTC'] } }, required: ['zone'], additionalProperties: false },
      },
    },
  ];
  const user: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Paris?' };

  it("unary: required gives a well-formed call of one function's schema; the answer after the tool message", async () => {
    const r = await client.chat.completions.create({
      model: 'small',
      messages: [user],
      tools,
      tool_choice: 'required',
      parallel_tool_calls: false,
      max_tokens: 200,
      seed: 11,
    });
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    const calls = r.choices[0].message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(calls).toHaveLength(1);
    expect(['get_weather', 'get_time']).toContain(calls[0].function.name);
    const args = JSON.parse(calls[0].function.arguments) as Record<string, string>;
    if (calls[0].function.name === 'get_weather') expect(['Paris', 'Oslo']).toContain(args.city);
    else expect(['CET', 'UTC']).toContain(args.zone);
    const back = await client.chat.completions.create({
      model: 'small',
      messages: [user, r.choices[0].message, { role: 'tool', tool_call_id: calls[0].id, content: 'sunny' }],
      tools,
      tool_choice: 'auto',
      max_tokens: 16,
      seed: 12,
    });
    expect(['stop', 'length']).toContain(back.choices[0].finish_reason);
    expect(back.choices[0].message.tool_calls).toBeUndefined();
    expect(back.usage!.prompt_tokens).toBeGreaterThan(r.usage!.prompt_tokens);
  }, 120_000);

  it('streamed, a named function: the call streams as OpenAI does and the helper rebuilds it', async () => {
    const stream = client.chat.completions.stream({
      model: 'small',
      messages: [user],
      tools,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      max_tokens: 200,
      seed: 13,
    });
    const done = await stream.finalChatCompletion();
    const call = done.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('get_time');
    expect(['CET', 'UTC']).toContain((JSON.parse(call.function.arguments) as { zone: string }).zone);
    expect(done.choices[0].finish_reason).toBe('tool_calls');
    const back = client.chat.completions.stream({
      model: 'small',
      messages: [user, done.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '12:00' }],
      tools,
      max_tokens: 16,
      seed: 14,
    });
    const answer = await back.finalChatCompletion();
    expect(['stop', 'length']).toContain(answer.choices[0].finish_reason);
  }, 120_000);
});

describe('cached_tokens from an engine in its worker thread', () => {
  it('a repeated prompt reports all but its last token cached', async () => {
    const ask = {
      model: 'small',
      messages: [{ role: 'user' as const, content: 'Tell me about rivers and lakes in the north, please.' }],
      max_tokens: 4,
      seed: 2,
    };
    const first = await client.chat.completions.create(ask);
    const again = await client.chat.completions.create(ask);
    expect(first.usage!.prompt_tokens_details!.cached_tokens).toBeLessThan(first.usage!.prompt_tokens - 1);
    expect(again.usage!.prompt_tokens_details!.cached_tokens).toBe(again.usage!.prompt_tokens - 1);
  }, 60_000);
});

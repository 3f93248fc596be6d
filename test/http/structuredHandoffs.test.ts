// Constrained answers written by two engines through a real listening server: a handoff on every token and R-Stitch, each answer valid against its schema.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import { everyTokenGraph } from '../bench/structured.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';

const SCHEMAS: Record<string, Record<string, unknown>> = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, '../fixtures/schemas/structured20.json'), 'utf8'),
);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-structured-handoffs-'));
const ADMIN = 'handoff-test-admin-token';
let service: TokenRouterService;
let server: RunningServer;
let client: OpenAI;
const ajv = new Ajv2020({ strict: false });

type Attributed = { tokenrouter?: { handoffs: number; tokens_by_model: Record<string, number> } };

beforeAll(async () => {
  const dir = realShapeFolder('qwen3-tiny').dir;
  service = await TokenRouterService.start(
    parseServerConfig({
      port: 0,
      dataDir: tmp,
      adminToken: ADMIN,
      memory: { budgetMiB: 2048 },
      limits: { maxTokens: 400 },
      models: [
        { name: 'small', path: dir },
        { name: 'large', path: dir },
      ],
    }),
  );
  server = await startServer(service, 0, '127.0.0.1');
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
  const ir = compileGraph(everyTokenGraph(), [
    { name: 'small', heads: [] },
    { name: 'large', heads: [] },
  ]);
  if (!ir.ok) throw new Error(JSON.stringify(ir.issues));
  const r = await fetch(`${server.url}/admin/algorithms/every-token/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ ir: ir.ir, activate: true }),
  });
  expect(r.status, await r.text()).toBe(201);
}, 300_000);
afterAll(async () => {
  await server?.close();
  await service?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const format = (name: string) => ({ type: 'json_schema' as const, json_schema: { name, schema: SCHEMAS[name], strict: true } });

describe('a constraint spans handoffs', () => {
  for (const name of ['name', 'temperature', 'order', 'matrix', 'scores']) {
    it(`every-token, ${name}: unary answers validate, written alternately by both models`, async () => {
      const check = ajv.compile(SCHEMAS[name]);
      for (const seed of [1, 2]) {
        const r = await client.chat.completions.create({
          model: 'every-token',
          messages: [{ role: 'user', content: `JSON for ${name}` }],
          response_format: format(name),
          max_tokens: 200,
          temperature: 1,
          seed,
        });
        const text = r.choices[0].message.content ?? '';
        expect(check(JSON.parse(text)), `${text}: ${ajv.errorsText(check.errors)}`).toBe(true);
        const t = (r as unknown as Attributed).tokenrouter!;
        // a token each: the model changed after every token but the last
        expect(t.handoffs).toBeGreaterThanOrEqual(r.usage!.completion_tokens - 1);
        expect(Object.keys(t.tokens_by_model).sort()).toEqual(['large', 'small']);
      }
    }, 120_000);
  }

  it('every-token, streamed with n = 2: each choice validates', async () => {
    const check = ajv.compile(SCHEMAS.address);
    const parts = ['', ''];
    for await (const c of await client.chat.completions.create({
      model: 'every-token',
      messages: [{ role: 'user', content: 'Where?' }],
      response_format: format('address'),
      max_tokens: 200,
      n: 2,
      seed: 7,
      stream: true,
    })) {
      for (const ch of c.choices) parts[ch.index] += ch.delta.content ?? '';
    }
    for (const p of parts) expect(check(JSON.parse(p)), `${p}: ${ajv.errorsText(check.errors)}`).toBe(true);
  }, 120_000);

  it('R-Stitch (its uncertain small tokens discarded and rewritten by large): answers validate', async () => {
    let discarded = 0;
    for (const name of ['user', 'version', 'tree']) {
      const check = ajv.compile(SCHEMAS[name]);
      const r = await client.chat.completions.create({
        model: 'r-stitch',
        messages: [{ role: 'user', content: `JSON for ${name}` }],
        response_format: format(name),
        max_tokens: 200,
        temperature: 1,
        seed: 3,
      });
      const text = r.choices[0].message.content ?? '';
      expect(check(JSON.parse(text)), `${text}: ${ajv.errorsText(check.errors)}`).toBe(true);
      discarded += (r as unknown as { tokenrouter: { discarded_tokens: number } }).tokenrouter.discarded_tokens;
    }
    expect(discarded).toBeGreaterThan(0);
  }, 180_000);
});

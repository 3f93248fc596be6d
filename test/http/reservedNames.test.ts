// A model's name is reserved: no algorithm may be deployed under it, and one stored under it earlier does not shadow the model.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AlgorithmRegistry } from '../../runtime/registry/algorithmRegistry.ts';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const modelList = async (url: string) => ((await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);

describe('reserved model names', () => {
  it('refuses to deploy an algorithm named like a served model with 409 naming the clash, and lists the model once', async () => {
    t = await startTestServer();
    const res = await post(`${t.url}/admin/algorithms/small/versions`, { builtin: 'r-stitch', activate: true });
    expect(res.status).toBe(409);
    const body = (await res.json()) as { error: { message: string; param: string | null } };
    expect(body.error.param).toBe('name');
    expect(body.error.message).toContain('"small" is the name of a model this server serves');
    expect(t.service.registry.get('small')).toBeUndefined();
    expect((await modelList(t.url)).filter((id) => id === 'small')).toHaveLength(1);
    // any other name still deploys
    expect((await post(`${t.url}/admin/algorithms/small-first/versions`, { builtin: 'r-stitch', activate: true })).status).toBe(201);
  });

  it('a stored algorithm named like a model (an older build let one in) does not shadow it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-reserved-'));
    const reg = new AlgorithmRegistry(dataDir);
    reg.createVersion('large', { kind: 'builtin', factory: 'r-stitch' }, { activate: true });
    reg.close();
    t = await startTestServer({ dataDir });
    expect((await modelList(t.url)).filter((id) => id === 'large')).toHaveLength(1);
    const res = await post(`${t.url}/v1/completions`, { model: 'large', prompt: '2+2=', max_tokens: 8, temperature: 0 });
    expect(res.status).toBe(200);
    const out = (await res.json()) as { tokenrouter: { algorithm: string; tokens_by_model: Record<string, number> } };
    // served by the model alone, not by the R-Stitch stored under its name
    expect(out.tokenrouter.algorithm).toBe('large');
    expect(Object.keys(out.tokenrouter.tokens_by_model)).toEqual(['large']);
  });
});

// Deploys never replace silently (409 without replace: true), algorithms can be deleted (not the default), and both survive a restart.
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, until, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

type Json = { error?: { message: string; code: string; param: string | null } } & Record<string, unknown>;
const call = async (url: string, method: string, body?: unknown) => {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Json };
};
const deploy = (s: TestServer, name: string, body: unknown) => call(`${s.url}/admin/algorithms/${name}/versions`, 'POST', body);
const remove = (s: TestServer, name: string) => call(`${s.url}/admin/algorithms/${name}`, 'DELETE');
const modelIds = async (s: TestServer) => ((await call(`${s.url}/v1/models`, 'GET')).json.data as { id: string }[]).map((m) => m.id);
const complete = (s: TestServer, model: string) => call(`${s.url}/v1/completions`, 'POST', { model, prompt: '2*3=', max_tokens: 6, temperature: 0 });

describe('deploying over an existing algorithm', () => {
  it('is 409 naming the algorithm without replace: true, stores nothing; with it, the next version', async () => {
    t = await startTestServer();
    const refused = await deploy(t, 'r2r', { builtin: 'r2r', params: { tau: 0.5 }, activate: true });
    expect(refused.status).toBe(409);
    expect(refused.json.error!.code).toBe('conflict');
    expect(refused.json.error!.param).toBe('name');
    expect(refused.json.error!.message).toMatch(/algorithm "r2r" already exists \(v1 active, 1 version\).*replace: true/);
    expect(t.service.registry.get('r2r')!.versions).toHaveLength(1);

    const replaced = await deploy(t, 'r2r', { builtin: 'r2r', params: { tau: 0.5 }, activate: true, replace: true });
    expect(replaced.status).toBe(201);
    expect(replaced.json).toEqual({ name: 'r2r', version: 2, activeVersion: 2 });
    const out = await complete(t, 'r2r');
    expect((out.json.tokenrouter as { version: number }).version).toBe(2);
  });

  it('a new name needs no flag; its second deploy does; a broken deploy is still 400 before any clash', async () => {
    t = await startTestServer();
    expect((await deploy(t, 'mine', { builtin: 'r-stitch' })).status).toBe(201);
    expect((await deploy(t, 'mine', { builtin: 'r-stitch' })).status).toBe(409);
    expect((await deploy(t, 'mine', { builtin: 'nope' })).status).toBe(400);
    expect((await deploy(t, 'fresh', { builtin: 'r-stitch', replace: true })).json).toEqual({ name: 'fresh', version: 1, activeVersion: null });
    expect((await deploy(t, 'mine', { builtin: 'r-stitch', replace: 'yes' })).status).toBe(400);
  });

  it('the list says which version a rollback re-activates and which algorithm is the default', async () => {
    t = await startTestServer();
    await deploy(t, 'r2r', { builtin: 'r2r', params: { tau: 0.4 }, activate: true, replace: true });
    const list = (await call(`${t.url}/admin/algorithms`, 'GET')).json.algorithms as {
      name: string;
      activeVersion: number;
      rollbackTo: number | null;
      isDefault: boolean;
    }[];
    expect(list.find((a) => a.name === 'r2r')).toMatchObject({ activeVersion: 2, rollbackTo: 1, isDefault: false });
    expect(list.find((a) => a.name === 'r-stitch')).toMatchObject({ activeVersion: 1, rollbackTo: null, isDefault: true });
  });
});

describe('deleting an algorithm', () => {
  it('removes it and every version: gone from the list and /v1/models, requests 404, a second delete 404', async () => {
    t = await startTestServer();
    await deploy(t, 'mine', { builtin: 'r-stitch', activate: true });
    await deploy(t, 'mine', { builtin: 'r-stitch', params: { tau: 0.5 }, activate: true, replace: true });
    expect(await modelIds(t)).toContain('mine');
    const r = await remove(t, 'mine');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ name: 'mine', deletedVersions: 2 });
    expect(await modelIds(t)).not.toContain('mine');
    expect(((await call(`${t.url}/admin/algorithms`, 'GET')).json.algorithms as { name: string }[]).map((a) => a.name)).not.toContain('mine');
    expect((await complete(t, 'mine')).status).toBe(404);
    const again = await remove(t, 'mine');
    expect(again.status).toBe(404);
    expect(again.json.error!.message).toMatch(/no algorithm named mine/);
    expect((await remove(t, 'ghost')).status).toBe(404);
  });

  it('a page on another site cannot delete (the origin guard covers DELETE)', async () => {
    t = await startTestServer();
    const res = await fetch(`${t.url}/admin/algorithms/r2r`, { method: 'DELETE', headers: { Origin: 'http://evil.example' } });
    expect(res.status).toBe(403);
    expect(t.service.registry.get('r2r')).toBeDefined();
  });

  it('refuses the default algorithm with 409 saying why, and keeps it', async () => {
    t = await startTestServer();
    const r = await remove(t, 'r-stitch');
    expect(r.status).toBe(409);
    expect(r.json.error!.message).toMatch(/r-stitch is the default algorithm.*defaultAlgorithm/);
    expect(await modelIds(t)).toContain('r-stitch');
    expect((await complete(t, 'r-stitch')).status).toBe(200);
  });

  it('a request already running on it finishes', async () => {
    t = await startTestServer({ latency: { small: 15, large: 15 } });
    const s = t;
    await deploy(s, 'mine', { builtin: 'r-stitch', activate: true });
    const running = call(`${s.url}/v1/completions`, 'POST', { model: 'mine', prompt: '7*8=', max_tokens: 40, temperature: 0 });
    await until(() => s.service.cluster.activeCount === 1);
    expect((await remove(s, 'mine')).status).toBe(200);
    const done = await running;
    expect(done.status).toBe(200);
    expect((done.json.usage as { completion_tokens: number }).completion_tokens).toBe(40);
  });

  it('a name deployed again after a delete gets a fresh version number and serves the new algorithm, not a cached one', async () => {
    t = await startTestServer();
    await deploy(t, 'mine', { builtin: 'single-large', activate: true });
    expect(Object.keys(((await complete(t, 'mine')).json.tokenrouter as { tokens_by_model: object }).tokens_by_model)).toEqual(['large']);
    await remove(t, 'mine');
    expect((await deploy(t, 'mine', { builtin: 'single-small', activate: true })).json).toEqual({ name: 'mine', version: 2, activeVersion: 2 });
    expect(Object.keys(((await complete(t, 'mine')).json.tokenrouter as { tokens_by_model: object }).tokens_by_model)).toEqual(['small']);
  });

  it('survives a restart: a deleted built-in is not seeded again', async () => {
    t = await startTestServer();
    const dataDir = t.dataDir;
    await deploy(t, 'mine', { builtin: 'r-stitch', activate: true });
    expect((await remove(t, 'mine')).status).toBe(200);
    expect((await remove(t, 'r2r')).status).toBe(200);
    await t.close();
    t = await startTestServer({ dataDir });
    const ids = await modelIds(t);
    expect(ids).not.toContain('mine');
    expect(ids).not.toContain('r2r');
    expect(ids).toContain('citer');
    expect(t.service.registry.get('r2r')).toBeUndefined();
    // the built-in stays available to deploy under any name, r2r included
    expect((await deploy(t, 'r2r', { builtin: 'r2r', activate: true })).json).toEqual({ name: 'r2r', version: 2, activeVersion: 2 });
  });
});

// Serving one's own exports: folders without router heads serve R-Stitch; router-head algorithms are refused at deploy, naming what is missing, and never listed; the worked config parses.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServerConfig, parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { tinyModelDir } from '../support/tinyFamily.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-own-'));
let service: TokenRouterService;
let srv: RunningServer;

/** A bundled model folder as a plain Hugging Face / Optimum export has it: no routers/. */
function plainExport(name: string): string {
  const dir = path.join(tmp, 'models', name);
  fs.cpSync(tinyModelDir(name), dir, { recursive: true });
  fs.rmSync(path.join(dir, 'routers'), { recursive: true, force: true });
  return dir;
}

beforeAll(async () => {
  const config = parseServerConfig({
    port: 0,
    dataDir: path.join(tmp, 'data'),
    memory: { budgetMiB: 1024 },
    models: [
      { name: 'small', path: plainExport('small') },
      { name: 'large', path: plainExport('large') },
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

describe('models without router heads', () => {
  it('R-Stitch (entropy only) is listed and answers; the seeded router-head built-ins are not listed', async () => {
    const ids = ((await (await fetch(`${srv.url}/v1/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(ids).toContain('r-stitch');
    for (const headed of ['r2r', 'citer', 'co-llm']) expect(ids).not.toContain(headed);
    const r = await fetch(`${srv.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'r-stitch', prompt: 'Q: 12*34=\nA: ', max_tokens: 8, temperature: 0 }),
    });
    expect(r.status).toBe(200);
  });

  it('deploying a router-head algorithm is a 400 naming the head, the model and the hidden_states output', async () => {
    const r = await fetch(`${srv.url}/admin/algorithms/mine/versions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ builtin: 'r2r', activate: true }),
    });
    expect(r.status).toBe(400);
    const { error } = (await r.json()) as { error: { message: string; param: string } };
    expect(error.param).toBe('builtin');
    expect(error.message).toMatch(/router head "r2r" on model "(small|large)", whose folder .* ships none: .*"hidden_states" output/);
  });
});

describe("the worked config for one's own models", () => {
  it("examples/configs/own-hf-models.json is valid and is docs/models.md's config", () => {
    const cfg = loadServerConfig(path.join(ROOT, 'examples/configs/own-hf-models.json'));
    const section = fs.readFileSync(path.join(ROOT, 'docs/models.md'), 'utf8');
    const block = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]) as Record<string, unknown>;
    const file = JSON.parse(fs.readFileSync(path.join(ROOT, 'examples/configs/own-hf-models.json'), 'utf8')) as Record<string, unknown>;
    for (const key of Object.keys(block)) expect(file[key], key).toEqual(block[key]);
    expect(cfg.models.map((m) => [m.name, m.path, m.dtype])).toEqual([
      ['small', '/srv/models/Qwen3-0.6B-ONNX', 'fp32'],
      ['large', '/srv/models/Qwen3-1.7B-ONNX', 'q8'],
    ]);
  });

  it('copied anywhere, its dataDir stays beside the copy (never escapes to /)', () => {
    const dir = path.join(tmp, 'copy');
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.join(ROOT, 'examples/configs/own-hf-models.json'), path.join(dir, 'config.json'));
    const cfg = loadServerConfig(path.join(dir, 'config.json'));
    expect(path.relative(dir, cfg.dataDir)).not.toMatch(/^\.\./);
    expect(path.dirname(cfg.dataDir)).toBe(dir);
  });
});

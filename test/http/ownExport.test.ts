// docs/models.md's recipe, step by step on real-shaped Qwen3 and Llama 3 folders: the config as printed, tokenrouter models, the openai client, every EOS id.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeStatus } from '../../runtime/cli/modelsCommand.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { modelFolderStatus } from '../../runtime/runner/modelFolder.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';

const MODELS_DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/models.md');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-own-export-'));

/** The config block of docs/models.md's recipe, its paths pointed at the fixtures. */
function readmeConfig(paths: Record<string, string>): Record<string, unknown> {
  const section = fs.readFileSync(MODELS_DOC, 'utf8');
  const m = /3\. \*\*Config\.\*\*[\s\S]*?```json\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('docs/models.md has no config block under step 3');
  const cfg = JSON.parse(m[1]) as { models: { name: string; path: string }[] };
  for (const model of cfg.models) model.path = paths[model.name];
  return cfg as unknown as Record<string, unknown>;
}

const started: { service: TokenRouterService; srv: RunningServer }[] = [];
async function serve(config: Record<string, unknown>): Promise<OpenAI> {
  const service = await TokenRouterService.start(parseServerConfig({ ...config, port: 0, dataDir: fs.mkdtempSync(path.join(tmp, 'data-')) }));
  const srv = await startServer(service, 0, '127.0.0.1');
  started.push({ service, srv });
  return new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused' });
}

afterAll(async () => {
  for (const { service, srv } of started) {
    await srv.close();
    await service.close();
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('docs/models.md recipe on a Qwen3-shaped pair (small fp32, large q8 from the same folder layout)', () => {
  let client: OpenAI;
  let paths: Record<string, string>;
  beforeAll(async () => {
    paths = { small: realShapeFolder('qwen3-tiny').dir, large: realShapeFolder('qwen3-tiny', 'quantized').dir };
    client = await serve(readmeConfig(paths));
  }, 300_000);

  it('tokenrouter models names the file each dtype picks, the vocabulary and every EOS id', () => {
    const small = describeStatus(modelFolderStatus(paths.small, { dtype: 'fp32' }, 'small'));
    const large = describeStatus(modelFolderStatus(paths.large, { dtype: 'q8' }, 'large'));
    expect(small).toMatch(/^ok\s+small\s+onnx\/model\.onnx .*dtype fp32.*vocab 151936\s+eos 151645, 151643/);
    expect(large).toMatch(/^ok\s+large\s+onnx\/model_quantized\.onnx .*dtype q8.*vocab 151936/);
  });

  it('r-stitch answers through the openai client, streamed as unary', async () => {
    const ask = { model: 'r-stitch', messages: [{ role: 'user' as const, content: 'Name three rivers.' }], max_tokens: 12, temperature: 0 };
    const unary = await client.chat.completions.create(ask);
    expect(unary.choices[0].finish_reason).toBe('length');
    expect(unary.usage?.completion_tokens).toBe(12);
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ ...ask, stream: true })) streamed += chunk.choices[0]?.delta?.content ?? '';
    expect(streamed).toBe(unary.choices[0].message.content);
  }, 120_000);

  it.each([151645, 151643])(
    'EOS id %i ends the answer with finish_reason stop, its text not shown',
    async (eos) => {
      const r = await client.chat.completions.create({
        model: 'r-stitch',
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 16,
        temperature: 0,
        logit_bias: { [eos]: 100 },
      });
      expect(r.choices[0].finish_reason).toBe('stop');
      expect(r.choices[0].message.content).toBe('');
    },
    60_000,
  );
});

describe('a Llama-3-shaped model alone: every EOS id of config.json and generation_config.json', () => {
  let client: OpenAI;
  beforeAll(async () => {
    client = await serve({ models: [{ name: 'llama', path: realShapeFolder('llama3-tiny').dir }], memory: { budgetMiB: 4096 } });
  }, 300_000);

  it.each([128001, 128008, 128009])(
    'EOS id %i ends the answer with finish_reason stop',
    async (eos) => {
      const r = await client.chat.completions.create({
        model: 'llama',
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 16,
        temperature: 0,
        logit_bias: { [eos]: 100 },
      });
      expect(r.choices[0].finish_reason).toBe('stop');
      expect(r.choices[0].message.content).toBe('');
    },
    60_000,
  );
});

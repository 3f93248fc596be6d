// memory.budgetMiB bounds the process: the plan takes off what loading measured (not the file sizes), /healthz and /metrics report it beside the RSS, and a real server stays under a small budget under load.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { metric, spawnServe, type ServeProcess } from '../reliability/serveProcess.ts';
import { TINY_FAMILY_DIR, tinyQuestions } from '../support/tinyFamily.ts';

const MiB = 2 ** 20;
const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'tr-mem-'));

describe('the memory plan measures what it takes off the budget', () => {
  it('weights as loaded, a workspace from a warm-up step, the process before models; KV gets exactly the rest', async () => {
    const budget = 1024;
    const service = await TokenRouterService.start(
      parseServerConfig({
        port: 0,
        dataDir: dataDir(),
        modelsDir: TINY_FAMILY_DIR,
        models: [{ name: 'small' }, { name: 'large' }],
        memory: { budgetMiB: budget, headroomMiB: 32 },
      }),
    );
    try {
      const m = service.memory;
      expect(m.budgetBytes).toBe(budget * MiB);
      // the models share one tokenizer: this thread keeps one parse of it
      expect(service.folders.get('large')!.tokenizerJson).toBe(service.folders.get('small')!.tokenizerJson);
      expect(m.baseBytes).toBeGreaterThan(10 * MiB);
      expect(m.headroomBytes).toBe(32 * MiB);
      for (const p of m.models) {
        const file = fs.statSync(path.join(TINY_FAMILY_DIR, p.name, 'onnx/model.onnx')).size;
        // the model as loaded (its thread, ORT's copy of the graph) holds more than its file
        expect(p.weightBytes, p.name).toBeGreaterThan(file);
        expect(p.workspaceBytes, p.name).toBeGreaterThanOrEqual(0);
      }
      const fixed = m.baseBytes + m.headroomBytes + m.models.reduce((s, p) => s + p.weightBytes + p.workspaceBytes, 0);
      const perToken = service.infos().reduce((s, i) => s + i.kvBytesPerToken, 0);
      expect(m.models[0].kvTokens).toBe(Math.floor((budget * MiB - fixed) / perToken));
      // the engines begin with that pool
      expect(service.cluster.engines.map((e) => e.kvCapacityTokens)).toEqual(m.models.map((p) => p.kvTokens));
    } finally {
      await service.close();
    }
  }, 120_000);

  it('refuses a budget the process and the loaded models already pass, saying what took it', async () => {
    // the file size (0.8 MiB) and one full-context request fit in 60 MiB; the process itself does not
    await expect(
      TokenRouterService.start(
        parseServerConfig({ port: 0, dataDir: dataDir(), modelsDir: TINY_FAMILY_DIR, models: [{ name: 'small' }], memory: { budgetMiB: 60 } }),
      ),
    ).rejects.toThrow(/memory.budgetMiB is too small: the process took [\d.]+ MiB before loading models, weights as loaded take [\d.]+ MiB, step workspaces/);
  }, 120_000);
});

describe('a real server under a small budget', () => {
  let srv: ServeProcess | undefined;
  afterAll(() => srv?.kill());

  it('stays under memory.budgetMiB through concurrent long prompts, and reports the split and its RSS', async () => {
    const BUDGET = 320;
    srv = await spawnServe({ memory: { budgetMiB: BUDGET }, models: [{ name: 'small', maxStepTokens: 32 }], limits: { maxConcurrency: 16, maxQueue: 64 } });
    const s = srv;
    let peak = s.rssBytes();
    const sampler = setInterval(() => (peak = Math.max(peak, s.rssBytes())), 10);
    try {
      const qs = tinyQuestions(40);
      const long = (i: number) => qs.slice(i % 20, (i % 20) + 18).join('\n\n');
      const ask = (i: number) =>
        fetch(`${s.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: long(i) }], max_tokens: 48, stream: true }),
        }).then((r) => r.text());
      const answers = await Promise.all(Array.from({ length: 48 }, (_, i) => ask(i)));
      expect(answers.every((a) => a.endsWith('data: [DONE]\n\n'))).toBe(true);
      const health = (await (await fetch(`${s.url}/healthz`)).json()) as {
        memory: {
          budgetBytes: number;
          rssBytes: number;
          baseBytes: number;
          models: { name: string; weightBytes: number; workspaceBytes: number; kvBytes: number }[];
        };
      };
      expect(health.memory.budgetBytes).toBe(BUDGET * MiB);
      expect(health.memory.rssBytes).toBeGreaterThan(0);
      expect(health.memory.models.map((m) => m.name)).toEqual(['small']);
      expect(await metric(s.url, 'tokenrouter_memory_budget_bytes')).toBe(BUDGET * MiB);
      expect(await metric(s.url, 'tokenrouter_resident_memory_bytes')).toBeGreaterThan(0);
      const planned = await metric(s.url, 'tokenrouter_memory_planned_bytes');
      expect(planned).toBeGreaterThan(BUDGET * MiB * 0.9);
      expect(planned).toBeLessThanOrEqual(BUDGET * MiB);
      expect(await metric(s.url, 'tokenrouter_forward_passes_total')).toBeGreaterThan(0);
    } finally {
      clearInterval(sampler);
    }
    console.log(`peak RSS ${(peak / MiB).toFixed(1)} MiB under a ${BUDGET} MiB budget`);
    expect(peak).toBeLessThanOrEqual(BUDGET * MiB);
  }, 120_000);
});

// Where the service puts each model's engine: "auto" (the default) is thread for ONNX model folders and in-process for runners handed to it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import { generate, type GenerateOutcome } from '../../runtime/http/openai/requestPlan.ts';
import { streamToken, type StreamToken } from '../../runtime/http/streamToken.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { startTestServer, type TestServer } from './testService.ts';
import { TINY_FAMILY_DIR, tinyFamilyPresent } from '../support/tinyFamily.ts';

const HAVE_ONNX = tinyFamilyPresent(['small']);

let service: TokenRouterService | undefined;
let t: TestServer | undefined;
afterEach(async () => {
  await service?.close();
  await t?.close();
  service = undefined;
  t = undefined;
});

const config = (scheduling: Record<string, unknown>) =>
  parseServerConfig({
    port: 0,
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-placement-')),
    modelsDir: TINY_FAMILY_DIR,
    models: [{ name: 'small' }],
    defaultAlgorithm: 'small',
    scheduling,
  });

describe('engine placement', () => {
  it('defaults to auto', () => {
    expect(config({}).scheduling.placement).toBe('auto');
  });

  it.runIf(HAVE_ONNX)(
    "auto puts an ONNX model folder's engine in its own thread, beside the model",
    async () => {
      service = await TokenRouterService.start(config({}));
      expect(service.threads.get('small')).toBeInstanceOf(ThreadEngine);
      expect(service.runners.size).toBe(0);
      expect(service.cluster.inProcessEngines).toHaveLength(0);
    },
    60_000,
  );

  it.runIf(HAVE_ONNX)(
    "in-process keeps the engine on the entry's thread, the model alone in a worker",
    async () => {
      service = await TokenRouterService.start(config({ placement: 'in-process' }));
      expect(service.threads.size).toBe(0);
      expect(service.cluster.inProcessEngine('small')).toBeDefined();
    },
    60_000,
  );

  it.runIf(HAVE_ONNX)(
    'the engine thread streams the text and per-token signals the in-process engine streams (detokenised beside the model, signals only when asked)',
    async () => {
      const run = async (placement: string, perToken: boolean) => {
        const s = await TokenRouterService.start(config({ placement }));
        try {
          const promptIds = s.chatPrompts.ids([{ role: 'user', content: '12*34' }]);
          const deltas: string[] = [];
          const tokens: (StreamToken | null)[] = [];
          const outcome = await new Promise<GenerateOutcome>((resolve) =>
            generate(
              s,
              { model: 'small', promptIds, maxTokens: 24, sampling: { temperature: 0, topP: 1, topK: 0, seed: 3 }, stop: [], perToken },
              {
                onToken: (id, m, _i, sig, atHandoff, d) => (
                  deltas.push(d), tokens.push(sig ? streamToken(id, s.tokenizer.decode([id]), m, sig, atHandoff, undefined) : null)
                ),
                onEnd: resolve,
              },
            ),
          );
          return { text: outcome.result.text, streamed: deltas.join(''), ids: outcome.result.tokens, tokens };
        } finally {
          await s.close();
        }
      };
      const thread = await run('auto', true);
      const inproc = await run('in-process', true);
      expect(thread.text.length).toBeGreaterThan(0);
      expect(thread.streamed).toBe(thread.text);
      expect(thread.text).toBe(inproc.text);
      expect(thread.ids).toEqual(inproc.ids);
      const sig = (ts: (StreamToken | null)[]) =>
        ts.filter((x) => x !== null).map((x) => ({ id: x.id, text: x.text, model: x.model, entropy: x.signals.entropy, maxProb: x.signals.maxProb }));
      expect(sig(thread.tokens)).toHaveLength(thread.ids.length);
      expect(sig(thread.tokens)).toEqual(sig(inproc.tokens));
      // a lean request gets no per-token detail across the port
      const lean = await run('auto', false);
      expect(lean.text).toBe(thread.text);
      expect(lean.tokens.every((x) => x === null)).toBe(true);
    },
    120_000,
  );

  it('auto keeps injected runners (simulated, virtual clock) in-process', async () => {
    t = await startTestServer();
    expect(t.service.config.scheduling.placement).toBe('auto');
    expect(t.service.threads.size).toBe(0);
    expect(t.service.cluster.inProcessEngine('small')).toBeDefined();
  });
});

// Entry processes for the distributed tests: a service + HTTP server over given models, and one completion call.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { charTokenizer } from '../http/testService.ts';

export interface Served {
  service: TokenRouterService;
  server: RunningServer;
  close(): Promise<void>;
}

/** `runners` undefined: the bundled ONNX folders (remote models excepted); else these runners and the character tokenizer. */
export async function serve(models: unknown[], runners: Map<string, ModelRunner> | undefined, limits: Record<string, number> = {}): Promise<Served> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-dist-'));
  const config = parseServerConfig({ port: 0, dataDir, memory: { budgetMiB: runners ? 64 : 1024 }, models, limits: { maxConcurrency: 32, ...limits } });
  const service = await TokenRouterService.start(config, runners ? { runners, tokenizer: charTokenizer() } : {});
  const server = await startServer(service, 0, '127.0.0.1');
  return {
    service,
    server,
    close: async () => {
      await server.close();
      await service.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Completion {
  status: number;
  text?: string;
  byModel?: Record<string, number>;
  error?: string;
}

export async function complete(url: string, model: string, prompt: string, seed: number, maxTokens: number): Promise<Completion> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: prompt }], max_tokens: maxTokens, temperature: 0.8, seed }),
  });
  const body = (await res.json()) as {
    choices?: { message: { content: string } }[];
    tokenrouter?: { tokens_by_model: Record<string, number> };
    error?: { message: string };
  };
  return { status: res.status, text: body.choices?.[0]?.message.content, byModel: body.tokenrouter?.tokens_by_model, error: body.error?.message };
}

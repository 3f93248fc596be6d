// A service for server tests: simulated runners over the bundled models' char vocabulary, real HTTP server.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseServerConfig, type ServerConfig } from '../../runtime/config/serverConfig.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { CHAR_VOCAB, charTokenizer } from '../../runtime/runner/charTokenizer.ts';
import type { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { mix } from '../../runtime/util/hash.ts';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

export const VOCAB = CHAR_VOCAB;
export { charTokenizer };

export interface TestServerOptions {
  config?: Record<string, unknown>;
  /** Clock ms per step for small and large. */
  latency?: { small: number; large: number; medium?: number };
  dataDir?: string;
  /** Probability that a sampled token is EOS (ends a request early); default 0. */
  eosRate?: number;
  /** Each simulated model's context window; default 256. */
  maxContext?: number;
  /** The service's tokenizer; default the bundled models' char vocabulary and chat template. */
  tokenizer?: TextTokenizer;
  /** A trace reader from the start, as a live-feed client (the server keeps its trace window either way). */
  traced?: boolean;
}

export interface TestServer {
  service: TokenRouterService;
  server: RunningServer;
  url: string;
  runners: Map<string, SimRunner>;
  dataDir: string;
  close(): Promise<void>;
}

/**
 * Digits-and-symbols tokens with entropy from the context hash, so R-Stitch really switches. */
function runner(name: string, stepMs: number, eosRate: number, maxContext: number): SimRunner {
  const salt = name.length * 7919;
  return new SimRunner({
    name,
    vocabSize: VOCAB.length,
    eosTokenIds: [2],
    maxContext,
    kvBytesPerToken: 4096,
    latency: () => stepMs,
    next: (ctx) => {
      const h = mix(ctx.contextHash, salt);
      const u = (h >>> 8) / 16777216;
      const token = u < eosRate ? 2 : 4 + (h % 10);
      const entropy = ((h >>> 4) % 1000) / 10000; // 0 … 0.1, around R-Stitch's τ = 0.03
      return { token, entropy, maxProb: 1 - entropy, heads: { citer: 1 - entropy, r2r: entropy * 5, colm: entropy * 2 } };
    },
  });
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tr-test-'));
  const lat = { small: 2, large: 5, medium: 3, ...opts.latency };
  // modelsDir: the bundled task's split files an evaluation reads, in the char vocabulary these runners speak
  const config: ServerConfig = parseServerConfig({ port: 0, dataDir, memory: { budgetMiB: 64 }, modelsDir: TINY_FAMILY_DIR, ...opts.config });
  const runners = new Map(config.models.map((m) => [m.name, runner(m.name, lat[m.name as 'small'] ?? 3, opts.eosRate ?? 0, opts.maxContext ?? 256)]));
  const service = await TokenRouterService.start(config, { runners: new Map(runners), tokenizer: opts.tokenizer ?? charTokenizer() });
  if (opts.traced) service.trace.subscribe(() => {});
  const server = await startServer(service, 0, '127.0.0.1');
  return {
    service,
    server,
    url: server.url,
    runners,
    dataDir,
    close: async () => {
      await server.close();
      await service.close();
    },
  };
}

/** Polls until `cond` holds or `ms` pass. */
export async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

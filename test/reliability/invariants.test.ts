// The debug-mode invariant checker is switched on by TOKENROUTER_CHECK_INVARIANTS=1 in the serving process, and catches what it should.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { InvariantError } from '../../runtime/core/invariants.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { generate } from '../../runtime/http/openai/requestPlan.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { charTokenizer, VOCAB } from '../http/testService.ts';

const saved = process.env.TOKENROUTER_CHECK_INVARIANTS;
afterEach(() => {
  if (saved === undefined) delete process.env.TOKENROUTER_CHECK_INVARIANTS;
  else process.env.TOKENROUTER_CHECK_INVARIANTS = saved;
});

/** A service on a virtual clock, so a batch's checks run inside clock.run() where a throw can be caught. */
async function service(): Promise<{ s: TokenRouterService; clock: VirtualClock }> {
  const clock = new VirtualClock();
  const config = parseServerConfig({
    port: 0,
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-inv-')),
    memory: { budgetMiB: 64 },
    models: [{ name: 'small' }, { name: 'large' }],
  });
  const runners = new Map(
    ['small', 'large'].map((n) => [n, new SimRunner({ name: n, vocabSize: VOCAB.length, maxContext: 256, kvBytesPerToken: 4096, latency: () => 1 })]),
  );
  return { s: await TokenRouterService.start(config, { runners, tokenizer: charTokenizer(), clock }), clock };
}

function generateOne(s: TokenRouterService): void {
  generate(
    s,
    { model: 'r-stitch', promptIds: [1, 5, 6, 7], maxTokens: 20, sampling: { temperature: 0, topP: 1, topK: 0, seed: 1 }, stop: [] },
    { onToken: () => {}, onEnd: () => {} },
  );
}

describe('invariant checker in the serving process', () => {
  it('TOKENROUTER_CHECK_INVARIANTS=1: a KV cache no request holds (a leak) is caught at the next batch', async () => {
    process.env.TOKENROUTER_CHECK_INVARIANTS = '1';
    const { s, clock } = await service();
    generateOne(s);
    clock.run(); // clean run: no violation
    generateOne(s);
    s.cluster.inProcessEngines[0].pool.tryOpen(3); // a cache nobody holds: its room never comes back
    let caught: unknown;
    try {
      clock.run();
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(InvariantError);
    expect((caught as Error).message).toMatch(/^small: KV pool holds cache \d+ \(0 tokens\) that no request holds$/);
    await s.close();
  });

  it('unset, the same leak goes unnoticed (the checker is really what caught it)', async () => {
    delete process.env.TOKENROUTER_CHECK_INVARIANTS;
    const { s, clock } = await service();
    generateOne(s);
    s.cluster.inProcessEngines[0].pool.tryOpen(3);
    expect(() => clock.run()).not.toThrow();
    await s.close();
  });
});

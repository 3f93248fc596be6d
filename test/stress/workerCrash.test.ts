// A real ONNX worker killed mid-load (the bundled models; a simulated runner when they are absent): only its requests fail, it restarts, nothing leaks.
import type { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WorkerRunner } from '../../runtime/runner/workerRunner.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { expectNothingLeft, leftovers, startRig, streamChat, until, type CrashableRunner } from '../reliability/harness.ts';
import { TINY_FAMILY_DIR, tinyFamilyPresent, tinyQuestions } from '../support/tinyFamily.ts';

const HAVE_ONNX = tinyFamilyPresent(['small', 'large']);
/** Multiplication questions the fixture family (and the simulated runners' char vocabulary) reads. */
const QUESTIONS = tinyQuestions(2000);

interface Target {
  kind: string;
  service: TokenRouterService;
  url: string;
  crash(): void;
  close(): Promise<void>;
}

async function start(placement: 'in-process' | 'thread'): Promise<Target> {
  if (HAVE_ONNX) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-onnx-crash-'));
    const config = parseServerConfig({
      port: 0,
      dataDir,
      modelsDir: TINY_FAMILY_DIR,
      models: [
        { name: 'small', maxBatch: 16 },
        { name: 'large', maxBatch: 16 },
      ],
      scheduling: { placement },
      limits: { maxConcurrency: 16, maxQueue: 64, maxTokens: 256, maxBodyBytes: 2 ** 20 },
    });
    const service = await TokenRouterService.start(config);
    const server = await startServer(service, 0, '127.0.0.1');
    return {
      kind: `onnx-${config.scheduling.placement}`,
      service,
      url: server.url,
      crash: () =>
        ((service.threads.get('large') as ThreadEngine | undefined) ?? (service.runners.get('large') as WorkerRunner)).crashForTest(
          'killed by the stress test',
        ),
      close: async () => {
        await server.close();
        await service.close();
      },
    };
  }
  const rig = await startRig({ latency: { small: 3, large: 8 }, restartMs: 300 });
  return {
    kind: 'simulated',
    service: rig.service,
    url: rig.url,
    crash: () => (rig.service.runners.get('large') as CrashableRunner).crash('killed by the stress test'),
    close: () => rig.close(),
  };
}

// Both placements: the model alone in a worker (in-process engines), and the model with its engine in an engine thread.
describe.each(HAVE_ONNX ? (['in-process', 'thread'] as const) : (['in-process'] as const))(
  'a sub-server worker killed mid-load (%s placement)',
  (placement) => {
    it('fails only requests holding state on it (clear error), refuses new ones while down (503), restarts by itself, releases every KV byte', async () => {
      const t = await start(placement);
      try {
        const s = t.service;
        const outcomes: { model: string; result: 'ok' | 'failed' | 'refused'; detail: string }[] = [];
        let stop = false;
        // large-only streams that have had a token and not yet ended: they hold KV on large right now
        const midAnswer = new Set<number>();
        const client = async (i: number) => {
          for (let k = 0; !stop; k++) {
            const model = ['large', 'r-stitch', 'small'][i % 3];
            const r = await streamChat(
              t.url,
              { model, messages: [{ role: 'user', content: QUESTIONS[(i * 1000 + k) % QUESTIONS.length] }], max_tokens: 64, temperature: 0 },
              { hangUp: (_chunks, text) => (model === 'large' && text.length > 0 && midAnswer.add(i), false) },
            );
            midAnswer.delete(i);
            if (r.status === 503 && r.error?.message.endsWith('is down; retry shortly')) {
              outcomes.push({ model, result: 'refused', detail: r.error.message });
              await new Promise((res) => setTimeout(res, 50));
            } else if (r.error) outcomes.push({ model, result: 'failed', detail: r.error.message });
            else if (r.done && (r.finishReason === 'stop' || r.finishReason === 'length')) outcomes.push({ model, result: 'ok', detail: r.finishReason });
            else throw new Error(`unexpected end of ${model}: ${JSON.stringify(r).slice(0, 300)}`);
          }
        };
        const clients = Array.from({ length: 12 }, (_, i) => client(i));
        // Kill it when work is flowing and requests hold state on it. Its large-only clients run in step
        // (same length, same batch), so a moment picked from lane stats can fall between their requests:
        // pick it in the tick that sees two of them mid-answer.
        await until(() => outcomes.length >= 12, 120_000);
        // The entry's own record decides, not the client's view: a stream the client still reads may have
        // ended on the server (coalesced chunks arrive late), and then the kill would find nothing to fail.
        // Two requests decoding on large with most of their answer still to come leave the kill a margin
        // of many large steps.
        const earlyOnLarge = () =>
          [...s.cluster.activeRequests()].filter((r) => !r.finished && r.whereabouts.model === 'large' && r.output.length >= 1 && r.output.length <= 32).length;
        await until(() => {
          const l = s.cluster.laneStats().find((x) => x.name === 'large')!;
          return l.kvBytes > 0 && midAnswer.size >= 1 && earlyOnLarge() >= 2;
        }, 60_000);
        const before = outcomes.length;
        t.crash();
        await until(() => (s.restarts.get('large') ?? 0) === 1, 120_000);
        // After the restart, it serves again: wait for fresh successes through large.
        await until(() => outcomes.slice(before).filter((o) => o.model === 'large' && o.result === 'ok').length >= 3, 120_000);
        stop = true;
        // a stream the server never ends would wait for the HTTP client's 300 s body timeout: name it sooner
        const ended = Promise.all(clients);
        await Promise.race([
          ended,
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error(`clients still waiting 60 s after the last round: ${JSON.stringify(leftovers(s))}`)), 60_000).unref(),
          ),
        ]);
        await expectNothingLeft(s, 30_000);
        const after = outcomes.slice(before);
        const tally = (m: string, r: string) => after.filter((o) => o.model === m && o.result === r).length;
        const summary = Object.fromEntries(
          ['large', 'r-stitch', 'small'].map((m) => [m, { ok: tally(m, 'ok'), failed: tally(m, 'failed'), refused: tally(m, 'refused') }]),
        );
        console.log(
          `[worker-crash/${t.kind}] 1 worker killed under 12 clients; outcomes after the kill ${JSON.stringify(summary)}; restarts ${s.restarts.get('large')}; leftovers ${JSON.stringify(leftovers(s))}`,
        );
        // Requests that never touch the dead model are untouched.
        expect(tally('small', 'failed') + tally('small', 'refused')).toBe(0);
        // Those that held state on it failed with a clear error (a JSON 503 when no token had been sent yet,
        // else the stream's last event); new ones were refused while it was down.
        expect(tally('large', 'failed')).toBeGreaterThan(0);
        for (const o of after.filter((x) => x.result === 'failed'))
          expect(o.detail).toMatch(
            /^model large failed: (worker|engine thread) of model "large" (crashed|exited)|^model large failed: worker for model "large" (crashed|exited)|^model large failed: killed by the stress test|^large step failed: /,
          );
        for (const o of after.filter((x) => x.result === 'refused')) expect(o.detail).toBe('model large is down; retry shortly');
        expect(s.cluster.engine('large')!.down).toBe(false);
      } finally {
        await t.close();
      }
    });
  },
);

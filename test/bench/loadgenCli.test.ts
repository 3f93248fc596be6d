// The load generator's open-loop and goodput flags as a user types them (spawned process): a bad value is one line and a non-zero exit; good ones reach the JSON and the text report.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { benchmarkServingInChild } from '../../runtime/loadgen/remoteBenchmark.ts';
import { startTestServer } from '../http/testService.ts';

const LOADGEN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../runtime/loadgen/cli.ts');
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm')).href;

function loadgen(args: string[], url = 'http://127.0.0.1:9'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', TSX, LOADGEN, '--url', url, '--model', 'r2r', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('loadgen cli flags', () => {
  // Against a port nothing listens on: every case must fail at its flags, before any request.
  it('a bad rate, burstiness, seed, cap or goodput is one line naming the flag', async () => {
    const cases: [string[], RegExp][] = [
      [['--request-rate', '-1'], /^--request-rate must be a number of requests per second > 0, or inf, got "-1"$/],
      [['--request-rate', 'fast'], /^--request-rate must be .*, got "fast"$/],
      [['--burstiness', '0'], /^--burstiness must be a number > 0, got "0"$/],
      [['--seed', '1.5'], /^--seed must be an integer from 0 to \d+, got "1.5"$/],
      [['--max-concurrency', '0'], /^--max-concurrency must be an integer from 1 to .*, got "0"$/],
      [['--max-concurrency', '2', '--concurrency', '2'], /^--max-concurrency and --concurrency are one setting: give only one$/],
      [['--goodput', 'foo:1'], /^--goodput: unknown metric "foo"; known: ttft, tpot, e2el$/],
      [['--goodput', 'ttft:500 tpot:x'], /^--goodput: tpot must be a number of ms > 0, got "x"$/],
    ];
    const runs = await Promise.all(cases.map(([args]) => loadgen(args)));
    runs.forEach((r, i) => {
      const lines = r.stderr.trim().split('\n');
      expect(r.code, r.stderr).toBe(2);
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(cases[i][1]);
      expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/^\s+at /m);
    });
  }, 30_000);

  it('an open-loop run reports its arrival settings, request throughput and goodput', async () => {
    const srv = await startTestServer({ latency: { small: 1, large: 2 } });
    try {
      const flags = [
        '--requests',
        '4',
        '--warmup',
        '0',
        '--max-tokens',
        '3',
        '--max-concurrency',
        '2',
        '--request-rate',
        '100',
        '--burstiness',
        '2',
        '--seed',
        '3',
        '--goodput',
        'ttft:60000,e2el:60000',
      ];
      const [json, text] = await Promise.all([loadgen([...flags, '--json', '-'], srv.url), loadgen([...flags, '--quiet', 'true'], srv.url)]);
      expect(json.code, json.stderr).toBe(0);
      const out = JSON.parse(json.stdout.trim().split('\n').pop()!);
      expect(out.load).toEqual({ request_rate: 100, latency_from: 'arrival', burstiness: 2, max_concurrency: 2, seed: 3 });
      expect(out.metrics.completed).toBe(4);
      expect(out.metrics.sloMet).toBe(4);
      expect(out.metrics.goodputReqS).toBeCloseTo(out.metrics.requestThroughputRps, 9);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/request throughput [\d.]+ req\/s/);
      expect(text.stdout).toMatch(/^goodput [\d.]+ req\/s \(4 of 4 completed met ttft:60000,e2el:60000\)$/m);
    } finally {
      await srv.close();
    }
  }, 30_000);

  it("a child process sends the few-shot chats when asked, and its times land on this process's clock", async () => {
    // a few-shot chat of three worked word problems is ~500–700 characters in the char vocabulary
    const srv = await startTestServer({ latency: { small: 1, large: 2 }, maxContext: 1024 });
    try {
      const load = { baseUrl: srv.url, model: 'small', concurrency: 2, requests: 4, warmup: 0, maxTokens: 2 };
      const t0 = performance.now();
      const [task, chat] = [await benchmarkServingInChild(load), await benchmarkServingInChild({ ...load, workload: 'few-shot-chat' })];
      const t1 = performance.now();
      // the preamble of three worked examples makes every chat prompt several times a bare question's
      const minChat = Math.min(...chat.records.map((r) => r.promptTokens!));
      const maxTask = Math.max(...task.records.map((r) => r.promptTokens!));
      expect(minChat).toBeGreaterThan(3 * maxTask);
      for (const r of [...task.records, ...chat.records]) {
        expect(r.sendMs).toBeGreaterThanOrEqual(t0);
        expect(r.endMs).toBeLessThanOrEqual(t1);
        expect(r.contentChunkMs.every((t) => t >= r.sendMs && t <= r.endMs)).toBe(true);
      }
    } finally {
      await srv.close();
    }
  }, 60_000);
});

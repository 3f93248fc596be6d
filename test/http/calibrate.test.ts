// Calibration on the tiny fixture family and its multiplication task: POST /admin/calibrate chooses R-Stitch's τ for a target share of tokens on large, and an evaluation at that τ gives a share near the target; `tokenrouter calibrate` prints it; bad requests name their field.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALIBRATABLE, calibrateResponseSchema } from '../../shared/api/calibrate.ts';
import { evaluateEventSchema, type EvaluationResult } from '../../shared/api/evaluate.ts';
import { loadServerConfig } from '../../runtime/config/serverConfig.ts';
import { calibrateThreshold } from '../../runtime/eval/calibrateThreshold.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-calibrate-'));
let service: TokenRouterService;
let srv: RunningServer;

beforeAll(async () => {
  service = await TokenRouterService.start({ ...loadServerConfig(undefined), port: 0, dataDir: path.join(tmp, 'data'), modelsDir: TINY_FAMILY_DIR });
  srv = await startServer(service, 0, '127.0.0.1');
}, 120_000);
afterAll(async () => {
  await srv?.close();
  await service?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const post = (p: string, body: unknown) =>
  fetch(`${srv.url}${p}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

async function evaluate(body: unknown): Promise<EvaluationResult> {
  const lines = (await (await post('/admin/evaluate', body)).text()).trim().split('\n');
  const last = evaluateEventSchema.parse(JSON.parse(lines[lines.length - 1]));
  if (last.type !== 'result') throw new Error(`evaluation ended with ${JSON.stringify(last)}`);
  return last.result;
}

describe('calibrateThreshold (the search)', () => {
  it('finds the value of a monotone share on a log scale, and says when the target is out of reach', async () => {
    // share = 1 − log10(v)/−4 on [1e-4, 1]: 1 at 1e-4, 0 at 1; 0.25 at v = 10^-1
    const measure = async (v: number) => ({ share: Math.min(1, Math.max(0, -Math.log10(v) / 4)), accuracy: 1 });
    const c = await calibrateThreshold(CALIBRATABLE['r-stitch'], 0.25, 10, measure);
    expect(c.reached).toBe(true);
    expect(Math.abs(c.share - 0.25)).toBeLessThan(0.01);
    expect(c.value).toBeGreaterThan(0.09);
    expect(c.value).toBeLessThan(0.11);
    const none = await calibrateThreshold(CALIBRATABLE['r-stitch'], 0.5, 5, async () => ({ share: 0.1, accuracy: 1 }));
    expect(none.reached).toBe(false);
    expect(none.trials).toHaveLength(2);
  });
});

describe('POST /admin/calibrate on the fixture models', () => {
  it("chooses R-Stitch's τ for 20 % of tokens on large, and an evaluation at that τ gives a share near 20 %", async () => {
    const res = await post('/admin/calibrate', { builtin: 'r-stitch', task: 'multiplication', target: 0.2, problems: 12, iterations: 6 });
    expect(res.status).toBe(200);
    const c = calibrateResponseSchema.parse(await res.json());
    expect(c.param).toBe('tau');
    expect(c.reached).toBe(true);
    expect(c.trials.length).toBeGreaterThanOrEqual(4);
    expect(Math.abs(c.share - 0.2)).toBeLessThan(0.05);
    // Checked on more problems than the trials ran (the set's first 32, of which the trials saw 12).
    const check = await evaluate({ builtin: 'r-stitch', task: 'multiplication', params: { tau: c.value }, problems: 32 });
    expect(Math.abs(check.tokenShare.large - 0.2), `share at τ ${c.value}: ${check.tokenShare.large}`).toBeLessThan(0.08);
    // The default τ is tuned for another share: calibration moved it.
    const dflt = await evaluate({ builtin: 'r-stitch', task: 'multiplication', problems: 32 });
    expect(Math.abs(dflt.tokenShare.large - 0.2)).toBeGreaterThan(Math.abs(check.tokenShare.large - 0.2));
  }, 120_000);

  it('refuses what it cannot calibrate, naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ builtin: 'me', target: 0.2 }, 'builtin'],
      [{ builtin: 'r-stitch', target: 1.5 }, 'target'],
      [{ builtin: 'r-stitch', target: 0.2, model: 'medium' }, 'model'],
      [{ builtin: 'r-stitch', target: 0.2, tau: 0.1 }, 'tau'],
    ];
    for (const [body, param] of cases) {
      const res = await post('/admin/calibrate', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    }
  });
});

describe('tokenrouter calibrate', () => {
  it('prints each trial, the chosen τ and how to deploy it', async () => {
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [
          path.join(ROOT, 'runtime/cli/tokenrouter.mjs'),
          'calibrate',
          '--url',
          srv.url,
          '--task',
          'multiplication',
          '--target',
          '0.3',
          '--problems',
          '4',
          '--iterations',
          '3',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(out.code, out.stderr).toBe(0);
    const m = /^tau = ([\d.e-]+): ([\d.]+) % of tokens on large \(target 30\.0 %\)/m.exec(out.stdout);
    expect(m, out.stdout).not.toBeNull();
    expect(out.stdout).toContain(`"params":{"tau":${m![1]}}`);
    expect(out.stdout.match(/^ {2}tau /gm)!.length).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it('a target out of 0–1 is one line naming --target', async () => {
    const out = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'runtime/cli/tokenrouter.mjs'), 'calibrate', '--url', srv.url, '--target', '2'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(out.code).toBe(2);
    expect(out.stderr.trim()).toMatch(/^error: --target must be a number from 0 to 1, got "2"$/);
  }, 30_000);
});

// `tokenrouter optimize --slo`: the SLO-aware choice for a recorded trace, at the trace's rate or a given one, and saying when none meets the SLO.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../runtime/cli/main.ts';
import { sloChoiceFromTrace } from '../../runtime/control/sloFromTrace.ts';
import { thresholdsFromTrace } from '../../runtime/control/thresholdsFromTrace.ts';
import { recordR2r } from '../sim/recordR2r.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-optimize-slo-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const events = recordR2r({ concurrency: 4, requests: 24, promptLength: 32, maxTokens: 64, maxWaitMs: 100 }).events;

describe('sloChoiceFromTrace', () => {
  const r = thresholdsFromTrace(events, { concurrency: 4, fixed: { small: 1 } });

  it('picks thresholds and a deadline that meet a reachable p99 TPOT bound, and says when a bound is out of reach', () => {
    const ok = sloChoiceFromTrace(events, r, { tpotMs: 35 }, { rateRps: 1, fixed: { small: 1 } });
    expect(ok).toMatchObject({ rateRps: 1, rateSource: 'given', meetsSlo: true, outputTokens: 64 });
    expect(ok.best.small).toBe(1);
    expect(ok.p99TpotMs).toBeLessThanOrEqual(35);
    const no = sloChoiceFromTrace(events, r, { tpotMs: 3 }, { rateRps: 1 });
    expect(no.meetsSlo).toBe(false);
  });

  it('reads the arrival rate from the trace when none is given', () => {
    const c = sloChoiceFromTrace(events, r, { tpotMs: 35 });
    expect(c.rateSource).toBe('trace');
    expect(c.rateRps).toBeGreaterThan(0);
  });

  it('tokenrouter optimize --slo prints the choice', async () => {
    const file = path.join(tmp, 'trace.jsonl');
    fs.writeFileSync(file, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    const out: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      expect(await main(['optimize', '--trace', file, '--concurrency', '4', '--fixed', 'small=1', '--slo', 'tpot:35', '--request-rate', '1'])).toBe(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
    expect(out.join('\n')).toMatch(
      /under --slo tpot:35 at 1\.00 req\/s \(--request-rate\), 64 output tokens:\n {2}thresholds small=1,large=\d+, maxWaitMs \d+: predicted goodput [\d.]+ req\/s, p99 TPOT [\d.]+ ms/,
    );
  });
});

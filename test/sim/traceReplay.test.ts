// Replaying a recorded trace: every request commits the recorded tokens from the recorded models, under any scheduling setup.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { main } from '../../runtime/cli/main.ts';
import { PAPER_R2R_PROFILE } from '../../runtime/sim/paperProfile.ts';
import { recordedWorkload, replayTrace } from '../../runtime/sim/traceReplay.ts';
import { recordR2r } from './recordR2r.ts';

describe('trace replay', () => {
  const { events, report: rep } = recordR2r({ concurrency: 8, requests: 48, promptLength: 16, maxTokens: 96, maxWaitMs: 20 });
  const byTokens = (rs: { tokens: number[]; producedBy: string[] }[]) => rs.map((r) => JSON.stringify([r.tokens, r.producedBy])).sort();
  const withHandoffs = (rs: { tokens: number[]; producedBy: string[]; handoffs: number; discarded: number }[]) =>
    rs.map((r) => JSON.stringify([r.tokens, r.producedBy, r.handoffs, r.discarded])).sort();

  it('reads each finished request, who wrote each token, and the step cost by batch size', () => {
    const w = recordedWorkload(events);
    expect(w.models).toEqual(['small', 'large']);
    expect(w.requests.length).toBe(48);
    expect(byTokens(w.requests)).toEqual(byTokens(rep.results));
    expect(w.latency[0][0]).toBeCloseTo(PAPER_R2R_PROFILE.stepMs.small, 6);
    expect(w.latency[1][0]).toBeCloseTo(PAPER_R2R_PROFILE.stepMs.large, 6);
    // The per-token charge of prefills and extends, recovered from the batches that fed more than a token a row.
    expect(w.perTokenMs[0]).toBeCloseTo(PAPER_R2R_PROFILE.prefillMsPerToken.small, 4);
    expect(w.perTokenMs[1]).toBeCloseTo(PAPER_R2R_PROFILE.prefillMsPerToken.large, 4);
    expect(w.concurrency).toBeGreaterThanOrEqual(7);
    expect(w.throughputTokS).toBeCloseTo(rep.throughputTokS, -1);
  });

  it.each([
    ['async-delayed', true, { large: 4 }],
    ['step-sync', true, {}],
    ['step-sync', false, {}],
  ] as const)('%s retain=%s %o: the same tokens from the same models, with the same hand-offs and discards', (mode, retainState, thresholds) => {
    const { report } = replayTrace(events, { mode, retainState, thresholds, concurrency: 8 });
    expect(report.completed).toBe(48);
    expect(withHandoffs(report.results)).toEqual(withHandoffs(rep.results));
  });

  it('replayed as recorded, throughput is close to the recording; re-admission (re-prefilling) costs on top of the barrier', () => {
    const same = replayTrace(events, { mode: 'async-delayed', retainState: true, concurrency: 8 }).report.throughputTokS;
    const sync = replayTrace(events, { mode: 'step-sync', retainState: true, concurrency: 8 }).report.throughputTokS;
    const baseline = replayTrace(events, { mode: 'step-sync', retainState: false, concurrency: 8 }).report.throughputTokS;
    expect(sync).toBeLessThan(same);
    expect(baseline).toBeLessThan(sync * 0.9);
    // Not exact: the replay charges each batch the mean recorded cost of its size, whatever it fed.
    expect(Math.abs(same - rep.throughputTokS) / rep.throughputTokS).toBeLessThan(0.05);
    expect(baseline).toBeLessThan(same * 0.8);
  });

  it('refuses a trace with nothing to replay', () => {
    expect(() => recordedWorkload(events.filter((e) => e.type !== 'request-end'))).toThrow(/no finished requests/);
  });

  it('tokenrouter simulate --replay FILE prints the recorded and replayed throughput; a missing file is a clear error', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-replay-'));
    const file = path.join(dir, 'rec.jsonl');
    fs.writeFileSync(file, events.map((e) => JSON.stringify(e)).join('\n'));
    const out: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
    const err = vi.spyOn(console, 'error').mockImplementation((...a) => void out.push(a.join(' ')));
    try {
      expect(await main(['simulate', '--replay', file, '--mode', 'step-sync', '--retain', 'false'])).toBe(0);
      expect(out.join('\n')).toMatch(/replayed 48 recorded requests on small, large/);
      expect(out.join('\n')).toMatch(/recorded [\d.]+ tok\/s; replayed \(step-sync, retain false/);
      expect(await main(['simulate', '--replay', path.join(dir, 'missing.jsonl')])).toBe(2);
      expect(out.join('\n')).toMatch(/cannot read --replay/);
    } finally {
      log.mockRestore();
      err.mockRestore();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

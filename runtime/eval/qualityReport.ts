// Markdown tables of one `tokenrouter eval --json` file, so docs/quality.md carries the run's numbers and no hand-copied ones.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { frontierSvg, type EvalEntry } from './evaluate.ts';
import type { ComparedPoint, ErrorOverlap } from './pairedStats.ts';
import type { MixPoint } from './mixEnsemble.ts';

export interface EvalReport {
  settings: Record<string, unknown>;
  /** `reference_tok_s`: large-only's throughput in the entry's own run, when runs were merged. */
  results: { entries: (Omit<EvalEntry, 'correct'> & { reference_tok_s?: number; correct_bits?: string })[] };
  points: (ComparedPoint | MixPoint)[];
  error_overlap?: ErrorOverlap | null;
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const pts = (v: number | null) => (v === null ? '–' : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}`);
const pval = (p: number | null) => (p === null ? '–' : p < 0.0001 ? '< 0.0001' : p.toPrecision(2));
const MARK: Record<string, string> = { above: '▲ above', same: '● same', below: '▼ below', reference: '◆ reference', untested: 'untested' };

/** The frontier table (serving entries), the ME-mix table and the error overlap, as markdown. */
export function qualityTables(report: EvalReport): string {
  const byName = new Map(report.results.entries.map((e) => [e.name, e]));
  const st = report.settings as {
    split?: string;
    problems?: number;
    split_size?: number;
    split_file?: string;
    split_seed?: number | null;
    maxTokens?: number;
    concurrency?: number;
    wallSeconds?: number;
    load_average_1m?: { start: number; end: number };
  };
  const load = st.load_average_1m
    ? `; load average (1 min) ${st.load_average_1m.start.toFixed(1)} at the start, ${st.load_average_1m.end.toFixed(1)} at the end`
    : '';
  const lines = [
    `Run: split ${st.split} (${st.problems} of ${st.split_size} problems, \`${st.split_file}\`${st.split_seed == null ? '' : `, seed ${st.split_seed}`}), greedy, max ${st.maxTokens} tokens, concurrency ${st.concurrency}; wall time ${Math.round(st.wallSeconds ?? 0)} s${load}.`,
    '',
    '| # | entry | kind | accuracy | vs large-only (points, 95 % CI) | McNemar p | mark | committed tok/s | × large-only | mean latency (ms) | handoffs / request | token share |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const large = byName.get('large-only');
  let k = 0;
  for (const p of report.points) {
    const e = byName.get(p.name);
    if (!e || p.tok_s === null) continue;
    k++;
    const share = Object.entries(e.token_share)
      .map(([m, s]) => `${m} ${(s * 100).toFixed(0)}%`)
      .join(' / ');
    const diff = large ? e.accuracy - large.accuracy : null;
    const ci = p.ci_low === null ? '' : ` (${pts(p.ci_low)} to ${pts(p.ci_high)})`;
    lines.push(
      `| ${k} | ${p.name} | ${p.kind} | ${pct(p.accuracy)} | ${p.name === 'large-only' ? '–' : `${pts(diff)}${ci}`} | ${pval(p.p_value)} | ${MARK[p.versus_reference]} | ${p.tok_s.toFixed(0)} | ${large ? (p.tok_s / (e.reference_tok_s ?? large.throughput_tok_s)).toFixed(2) : '–'} | ${e.mean_latency_ms.toFixed(0)} | ${e.handoffs_per_request.toFixed(2)} | ${share} |`,
    );
  }
  const mixes = report.points.filter((p): p is MixPoint => p.tok_s === null);
  if (mixes.length) {
    lines.push(
      '',
      '| ME-mix (reference loop) | rule | accuracy | vs large-only (points, 95 % CI) | McNemar p | best member | vs best member (points, 95 % CI) | p | consulted positions | changed tokens |',
      '|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const m of mixes) {
      const b = m.best_member;
      const d = large ? m.accuracy - large.accuracy : null;
      lines.push(
        `| ${m.name} | ${m.rule} | ${pct(m.accuracy)} | ${pts(d)} (${pts(m.ci_low)} to ${pts(m.ci_high)}) | ${pval(m.p_value)} | ${b ? `${b.name} ${pct(b.accuracy)}` : '–'} | ${b ? `${pts(m.accuracy - b.accuracy)} (${pts(b.ci_low)} to ${pts(b.ci_high)})` : '–'} | ${b ? pval(b.p_value) : '–'} | ${(m.consult_share * 100).toFixed(2)}% | ${(m.changed_share * 100).toFixed(3)}% |`,
      );
    }
  }
  const o = report.error_overlap;
  if (o) {
    const others = Object.entries(o.right_instead)
      .map(([n, c]) => `${n} right on ${c}`)
      .join(', ');
    lines.push(
      '',
      `Error overlap: ${o.reference} is wrong on ${o.reference_wrong} of ${report.settings.problems} problems; of those, ${others}; at least one of them right on ${o.any_right}.`,
    );
  }
  lines.push(...overlapLines(report));
  return lines.join('\n');
}

/**
 * From the entries' per-problem bits: how many problems each pattern of right (✓) and wrong (✗) among
 * the single models holds, and per routed entry the large-only errors it fixes and the large-only
 * successes it breaks, so "how much could any mix win" is read off the same run.
 */
function overlapLines(report: EvalReport): string[] {
  const entries = report.results.entries.filter((e) => e.correct_bits);
  const large = entries.find((e) => e.name === 'large-only');
  const singles = entries.filter((e) => e.kind === 'single');
  if (!large || singles.length < 2) return [];
  const n = large.correct_bits!.length;
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const key = singles.map((e) => (e.correct_bits![i] === '1' ? '✓' : '✗')).join(' | ');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const out = [
    '',
    `Per-problem overlap of the single models (✓ right, ✗ wrong; ${n} problems):`,
    '',
    `| ${singles.map((e) => e.name).join(' | ')} | problems |`,
    `|${singles.map(() => '---|').join('')}---|`,
  ];
  for (const [key, c] of [...counts].sort((a, b) => b[1] - a[1])) out.push(`| ${key} | ${c} |`);
  const routed = entries.filter((e) => e.kind !== 'single');
  if (routed.length) {
    out.push(
      '',
      `Routed entries against large-only, problem by problem (large-only wrong on ${[...large.correct_bits!].filter((b) => b === '0').length}):`,
      '',
      '| entry | fixes (right where large-only is wrong) | breaks (wrong where large-only is right) |',
      '|---|---|---|',
    );
    for (const e of routed) {
      let fixes = 0;
      let breaks = 0;
      for (let i = 0; i < n; i++) {
        if (e.correct_bits![i] === '1' && large.correct_bits![i] === '0') fixes++;
        if (e.correct_bits![i] === '0' && large.correct_bits![i] === '1') breaks++;
      }
      out.push(`| ${e.name} | ${fixes} | ${breaks} |`);
    }
  }
  return out;
}

/**
 * One report from several runs on the same split (e.g. the algorithms run in turns, each beside its
 * own large-only): entries and points by name, the first run's wins (greedy runs agree on accuracy;
 * a differing large-only is refused), wall times summed, the first run's error overlap.
 */
export function mergeReports(reports: readonly EvalReport[]): EvalReport {
  const [first, ...rest] = reports;
  const key = (r: EvalReport) => JSON.stringify([r.settings.split, r.settings.problems, r.settings.maxTokens]);
  // Throughput compares within a run: each entry keeps its own run's large-only figure.
  const withRef = (r: EvalReport) => {
    const ref = r.results.entries.find((e) => e.name === 'large-only')?.throughput_tok_s;
    return r.results.entries.map((e) => ({ ...e, reference_tok_s: e.reference_tok_s ?? ref }));
  };
  const entries = new Map(withRef(first).map((e) => [e.name, e]));
  const points = new Map(first.points.map((p) => [p.name, p]));
  for (const r of rest) {
    if (key(r) !== key(first)) throw new Error(`qualityReport: cannot merge runs on different splits or settings: ${key(r)} vs ${key(first)}`);
    for (const e of withRef(r)) {
      const had = entries.get(e.name);
      if (had && had.accuracy !== e.accuracy) throw new Error(`qualityReport: ${e.name} differs between the runs (${had.accuracy} vs ${e.accuracy})`);
      if (!had) entries.set(e.name, e);
    }
    for (const p of r.points) if (!points.has(p.name)) points.set(p.name, p);
  }
  const wall = reports.reduce((s, r) => s + Number(r.settings.wallSeconds ?? 0), 0);
  const loads = reports.map((r) => r.settings.load_average_1m as { start: number; end: number } | undefined).filter((l) => l !== undefined);
  return {
    settings: {
      ...first.settings,
      wallSeconds: wall,
      runs: reports.length,
      load_average_1m: loads.length ? { start: Math.min(...loads.map((l) => l.start)), end: Math.max(...loads.map((l) => l.end)) } : undefined,
    },
    results: { entries: [...entries.values()] },
    points: [...points.values()],
    error_overlap: first.error_overlap,
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (flag: string) => {
    const i = args.indexOf(flag);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v ?? '';
  };
  const svg = opt('--svg');
  const out = opt('--json');
  if (!args.length || svg === '' || out === '') {
    console.error('usage: npx tsx runtime/eval/qualityReport.ts EVAL.json [MORE.json ...] [--json MERGED.json] [--svg FRONTIER.svg]');
    process.exit(2);
  }
  const report = mergeReports(args.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')) as EvalReport));
  if (out) fs.writeFileSync(out, JSON.stringify(report, null, 2));
  console.log(qualityTables(report));
  // The plot again from the file's points, so a fix to the drawing needs no new run.
  if (svg) fs.writeFileSync(svg, frontierSvg(report.points.filter((p): p is ComparedPoint => p.tok_s !== null)));
}

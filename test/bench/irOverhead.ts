// Suite ir-overhead: runtime cost per committed token of an IR-compiled algorithm against its TypeScript original.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Algorithm } from '../../shared/algorithm.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import { builtinFactory } from '../../examples/algorithms/index.ts';
import { compileIr } from '../../runtime/ir/compileIr.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { runClosedLoop } from '../../runtime/sim/closedLoop.ts';
import { mix } from '../../runtime/util/hash.ts';
import { percentile } from '../../runtime/util/stats.ts';
import type { BenchOptions, BenchReport } from './benchSuite.ts';
import { printTable } from '../../runtime/util/table.ts';

const GRAPHS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/graphs');
const CATALOG = ['small', 'medium', 'large'].map((name) => ({ name, heads: ['citer', 'r2r', 'colm'], vocabSize: 64 }));

/** Zero-latency runners whose signals make every algorithm switch now and then. */
function runners(): SimRunner[] {
  return CATALOG.map(
    (c, i) =>
      new SimRunner({
        name: c.name,
        vocabSize: 64,
        next: (ctx) => {
          const h = mix(ctx.contextHash, i + 1);
          const u = (h >>> 8) / 16777216;
          return { token: 4 + (h % 60), entropy: u * 0.1, maxProb: 1 - u * 0.5, heads: { citer: 1 - u * 0.3, r2r: u, colm: u * 0.5 } };
        },
      }),
  );
}

/** A full collection before each measurement, so neither side pays for garbage the other left. */
const collect: () => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
})();

function measure(alg: Algorithm<unknown>, concurrency: number, requests: number, tokens: number): { us: number; committed: number } {
  collect();
  const clock = new VirtualClock();
  const rs = runners();
  const cluster = new Cluster({
    clock,
    maxConcurrency: concurrency,
    prefixCache: false,
    models: rs.filter((r) => alg.models.includes(r.info.name)).map((runner) => ({ name: runner.info.name, runner, maxBatch: 64 })),
  });
  const t0 = performance.now();
  const rep = runClosedLoop(cluster, clock, alg, { concurrency, requests, promptLength: 16, maxTokens: tokens, keepResults: false });
  const wall = performance.now() - t0;
  const runnerMs = cluster.inProcessEngines.reduce((s, l) => s + l.stats.runnerWallMs, 0);
  return { us: ((wall - runnerMs) * 1000) / rep.committed, committed: rep.committed };
}

export async function run(opts: BenchOptions): Promise<BenchReport> {
  const concurrency = Number(opts.flags.concurrency ?? 64);
  const requests = Number(opts.flags.requests ?? 512);
  const tokens = Number(opts.flags.tokens ?? 256);
  const reps = Number(opts.flags.runs ?? 15);
  const rows: Record<string, unknown>[] = [];
  for (const name of ['r-stitch', 'citer', 'r2r', 'co-llm', 'me']) {
    const ts = builtinFactory(name)() as Algorithm<unknown>;
    const graph = JSON.parse(fs.readFileSync(path.join(GRAPHS, `${name}.json`), 'utf8'));
    const compiled = compileGraph(graph, CATALOG);
    if (!compiled.ok) throw new Error(`${name}.json does not compile: ${compiled.issues.map((i) => i.code).join(', ')}`);
    const ir = compileIr(compiled.ir, { models: CATALOG }) as Algorithm<unknown>;
    measure(ts, concurrency, concurrency, 32); // warm-up
    measure(ir, concurrency, concurrency, 32);
    // Paired and interleaved, order alternating: each pair runs back to back, so a burst of other
    // load hits both sides of it; the median pair ratio is the figure (best-of is kept for reference).
    const ts_us: number[] = [];
    const ir_us: number[] = [];
    const ratios: number[] = [];
    for (let i = 0; i < reps; i++) {
      const first = i % 2 === 0 ? ts : ir;
      const a = measure(first, concurrency, requests, tokens).us;
      const b = measure(first === ts ? ir : ts, concurrency, requests, tokens).us;
      const [t, r] = first === ts ? [a, b] : [b, a];
      ts_us.push(t);
      ir_us.push(r);
      ratios.push(r / t - 1);
    }
    rows.push({
      algorithm: name,
      ts_us_per_token: percentile(ts_us, 50),
      ir_us_per_token: percentile(ir_us, 50),
      ir_over_ts: percentile(ratios, 50),
      ir_over_ts_best_of: Math.min(...ir_us) / Math.min(...ts_us) - 1,
      pair_ratios: ratios,
    });
    process.stderr.write(`${name} done\n`);
  }
  const pct = (x: unknown) => `${((x as number) * 100).toFixed(1)}%`;
  printTable(rows.map(({ pair_ratios: _p, ...r }) => ({ ...r, ir_over_ts: pct(r.ir_over_ts), ir_over_ts_best_of: pct(r.ir_over_ts_best_of) })));
  return {
    suite: 'ir-overhead',
    settings: {
      concurrency,
      requests,
      tokens,
      runs: reps,
      runner: 'zero-latency simulated',
      mode: 'async-delayed, thresholds 1',
      measure:
        'non-model µs per committed token; ir_over_ts = median over runs of the paired ratio (TS and IR back to back, order alternating, full GC before each measurement)',
    },
    results: { rows, max_ir_over_ts: Math.max(...rows.map((r) => r.ir_over_ts as number)) },
  };
}

// `npm run bench -- <suite> [--json FILE]`: runs one benchmark suite and writes {suite, settings, results}.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { BenchSuite } from './benchSuite.ts';
import { lookaheadSetting, setLookahead, setTraceDir } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';

const SUITES: Record<string, () => Promise<{ run: BenchSuite }>> = {
  'sim-modes': () => import('./simModes.ts'),
  overhead: () => import('./overhead.ts'),
  models: () => import('./models.ts') as Promise<{ run: BenchSuite }>,
  'ir-overhead': () => import('./irOverhead.ts'),
  'dtmc-validate': () => import('./dtmcValidate.ts'),
  'dtmc-solve': () => import('./dtmcSolve.ts') as Promise<{ run: BenchSuite }>,
  'dtmc-onnx': () => import('./dtmcOnnx.ts'),
  serving: () => import('./serving.ts'),
  length: () => import('./length.ts'),
  concurrency: () => import('./concurrency.ts'),
  scale: () => import('./scale.ts'),
  distributed: () => import('./distributed.ts'),
  ablation: () => import('./ablation.ts'),
  breakdown: () => import('./breakdown.ts'),
  combos: () => import('./combos.ts'),
};

/** Suites that serve through the real server (runServingCase), whose runs --trace records. */
const SERVING_SUITES = new Set(['serving', 'length', 'concurrency', 'ablation', 'breakdown', 'combos']);

export async function main(argv: string[]): Promise<number> {
  const [suite, ...rest] = argv;
  if (!suite || suite === '--help' || suite === '-h') {
    console.log(`usage: npm run bench -- <suite> [--json FILE] [--trace DIR] [--key value ...]\nsuites: ${Object.keys(SUITES).join(', ')}\n--trace DIR: ${[...SERVING_SUITES].join(', ')} write one JSON-lines trace per server run`);
    return suite ? 0 : 2;
  }
  const load = SUITES[suite];
  if (!load) {
    console.error(`unknown suite "${suite}"; suites: ${Object.keys(SUITES).join(', ')}`);
    return 2;
  }
  const flags: Record<string, string> = {};
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (!a.startsWith('--')) {
      console.error(`unexpected argument "${a}"`);
      return 2;
    }
    const v = rest[i + 1];
    if (v === undefined || v.startsWith('--')) {
      console.error(`flag ${a} needs a value`);
      return 2;
    }
    flags[a.slice(2)] = v;
    i++;
  }
  const { run } = await load();
  // --lookahead K: TokenRouter mode's scheduling.lookahead in every serving run (default: the server's)
  setLookahead(new SuiteFlags(flags).lookahead);
  if (flags.trace) {
    if (!SERVING_SUITES.has(suite)) console.error(`note: --trace is written by the suites that start servers (${[...SERVING_SUITES].join(', ')}); ${suite} writes none`);
    setTraceDir(resolve(flags.trace));
  }
  const report = await run({ json: flags.json, flags });
  if (SERVING_SUITES.has(suite)) report.settings.tokenrouter_lookahead = lookaheadSetting();
  if (flags.trace && SERVING_SUITES.has(suite)) console.log(`traces (open them in the timeline): ${flags.trace}`);
  if (flags.json) {
    mkdirSync(dirname(flags.json), { recursive: true });
    writeFileSync(flags.json, JSON.stringify(report, null, 2));
    console.log(`wrote ${flags.json}`);
  }
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}

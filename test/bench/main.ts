// `npm run bench -- <suite> [--json FILE]`: runs one benchmark suite and writes {suite, settings, results}.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { BenchSuite } from './benchSuite.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { servingFlags } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { checkTag, writeSuiteOutput } from './suiteOutput.ts';
import { parseFlags } from '../../runtime/util/cliFlags.ts';

interface Suite {
  /** What it measures, one line. */
  about: string;
  /** A full run on the reference machine (docs/benchmarks.md, "Suites"); --quick 1 is a smoke run. */
  duration: string;
  load: () => Promise<{ run: BenchSuite }>;
}

export const SUITES: Record<string, Suite> = {
  'sim-modes': {
    about: "the paper's R2R setting in virtual time: the four scheduling modes and the re-init baseline",
    duration: '~15 s',
    load: () => import('./simModes.ts'),
  },
  overhead: {
    about: 'µs of non-model work per committed token (zero-latency runners), and simulation speed',
    duration: '~10 s',
    load: () => import('./overhead.ts'),
  },
  models: {
    about: "each bundled model's step latency by batch and context, time outside session.run, two-worker overlap",
    duration: '~2 min',
    load: () => import('./models.ts') as Promise<{ run: BenchSuite }>,
  },
  'ir-overhead': {
    about: 'runtime cost per token of an IR-compiled algorithm against its TypeScript original',
    duration: '~1.2 min',
    load: () => import('./irOverhead.ts'),
  },
  'dtmc-validate': {
    about: "the throughput model's predictions against the runtime in virtual time",
    duration: '~1 min',
    load: () => import('./dtmcValidate.ts'),
  },
  'dtmc-solve': {
    about: 'how long the throughput model takes to build and solve, and its chain size',
    duration: '~4.5 min',
    load: () => import('./dtmcSolve.ts') as Promise<{ run: BenchSuite }>,
  },
  'dtmc-onnx': { about: 'the throughput model against R2R on the bundled ONNX models, real clock', duration: '~3.7 min', load: () => import('./dtmcOnnx.ts') },
  serving: {
    about: 'each algorithm at concurrency 4 over HTTP, TokenRouter mode vs standard serving',
    duration: '~2.4 min',
    load: () => import('./serving.ts'),
  },
  length: { about: 'throughput as max output grows, TokenRouter mode vs standard serving', duration: '~6.4 min', load: () => import('./length.ts') },
  concurrency: { about: '1 → 16 concurrent requests: total throughput and per-request speed', duration: '~2 min', load: () => import('./concurrency.ts') },
  scale: { about: '1,000 concurrent and 100,000 requests through the real scheduler in virtual time', duration: '~0.5 min', load: () => import('./scale.ts') },
  distributed: {
    about: 'the large model in-process, behind 1 ms each way alone, in another process, and across namespaces with 1 ms each way',
    duration: '~1.9 min',
    load: () => import('./distributed.ts'),
  },
  ablation: {
    about: 'R2R at concurrency 8: baseline → + state retention → + async → + delayed batching',
    duration: '~1.2 min',
    load: () => import('./ablation.ts'),
  },
  breakdown: { about: "where each sub-server's busy time goes at concurrency 16", duration: '~0.7 min', load: () => import('./breakdown.ts') },
  combos: {
    about: 'one algorithm on each pair of bundled models, TokenRouter mode vs standard serving',
    duration: '~1.5 min',
    load: () => import('./combos.ts'),
  },
  rate: {
    about:
      'open-loop request-rate sweep: paper profile in virtual time (the SLO-aware choice against an exhaustive sweep), bundled models over HTTP; goodput and p99 TPOT/TTFT (bundled: latency from arrival, a capacity probe sets the grid)',
    duration: '~20 min',
    load: () => import('./rate.ts'),
  },
  prefix: {
    about: 'few-shot chats at concurrency 8 over HTTP, prefix cache on vs off; KV copy vs prefill per token',
    duration: '~2 min',
    load: () => import('./prefix.ts'),
  },
  predict: {
    about:
      "each built-in evaluated on held-out problems, its tok/s at c = 8 predicted from that run and measured over HTTP; an evaluation's cost to live traffic",
    duration: '~3 min',
    load: () => import('./predict.ts'),
  },
  setup: {
    about: 'per-request set-up on the entry: body text to the request handed to its engine (JSON, validation, chat template, admission, actor)',
    duration: '~0.3 min',
    load: () => import('./setup.ts'),
  },
  offline: {
    about: "one model: an in-process static batched generate loop over the server's runner vs the server at concurrency 8 over HTTP",
    duration: '~1.3 min',
    load: () => import('./offline.ts'),
  },
  'long-prompt': {
    about:
      "decode streams on a real-shaped pair while four ~1,542-token prompts arrive at the large: ITL p50/p99 before and during, the prompts' TTFT against a lone one, peak RSS against memory.budgetMiB; chunked prefill on and off",
    duration: '~8 min',
    load: () => import('./longPrompt.ts'),
  },
  'real-shape': {
    about:
      "Qwen3-shaped fixtures (vocabulary 151,936): served at c = 8 greedy and top_p vs transformers.js, a long prompt's TTFT and RSS, load peak; --baseline DIR adds an older checkout",
    duration: '~6 min',
    load: () => import('./realShape.ts'),
  },
  sampling: {
    about:
      "one row's signals and draw at V = 151,936 (greedy, temperature, top_p; flat and peaked): the old JavaScript beside the signal nodes' ORT + JavaScript time",
    duration: '~0.5 min',
    load: () => import('./samplingRow.ts'),
  },
  structured: {
    about:
      'JSON-schema answers (20 schemas) from real-shaped random-weight models under R-Stitch and a handoff on every token, unary and streamed, n = 2 among them: the share that parses and validates',
    duration: '~6 min',
    load: () => import('./structured.ts'),
  },
  mask: {
    about: "a grammar mask's cost per decode step on a real-shaped model at V = 151,936 (dense and sparse masks, greedy and top_p) against unmasked, at c = 8",
    duration: '~1 min',
    load: () => import('./maskCost.ts'),
  },
  'batch-cost': {
    about: 'candidate Qwen3 sizes (random weights): decode step at context 256 by batch and intra-op threads, for the bundled family',
    duration: '~4 min',
    load: () => import('./batchCost.ts'),
  },
  'transformers-js': {
    about: "one model served at concurrency 8 over HTTP vs transformers.js' batched generate on the same model and prompts (fixed length)",
    duration: '~2 min',
    load: () => import('./transformersJs.ts'),
  },
};

/**
 * Every flag some suite reads (SuiteFlags keys and the suites' own reads), so a mistyped one is an
 * error naming it instead of a silently ignored setting. A suite reading a new flag adds it here.
 */
export const SUITE_FLAGS = [
  'json',
  'trace',
  'quick',
  'algorithm',
  'algorithms',
  'bundled-lengths',
  'bundled-requests-per-client',
  'calibration-requests',
  'calibration-requests-per-client',
  'client',
  'concurrency',
  'delay-ms',
  'ignore-eos',
  'large-stay',
  'large-threshold',
  'lengths',
  'levels',
  'max-batch',
  'max-tokens',
  'max-wait-ms',
  'p',
  'paper-max-tokens',
  'prompt',
  'relay',
  'repeats',
  'requests',
  'placement',
  'stream-interval',
  'requests-per-client',
  'rounds',
  'runners',
  'settle-ms',
  'tag',
  'threshold-large',
  'threshold-small',
  'thresholds',
  'tokens',
  'warmup',
  'warmup-ms',
  'window-ms',
  'horizon',
  'models',
  'models-dir',
  'runs',
  'max-states',
  'budget-s',
  'request-rate',
  'burstiness',
  'goodput',
  'rates',
  'slo-tpot-ms',
  'max-wait-choices',
  'seed',
  'skip-paper',
  'bundled-rates',
  'bundled-slo-tpot-ms',
  'bundled-slo-ttft-ms',
  'bundled-max-tokens',
  'cost-reps',
  'bundled-algorithm',
  'bundled-rate-fractions',
  'bundled-duration-s',
  'bundled-min-requests',
  'bundled-warmup',
  'bundled-probe-requests',
  'bundled-ignore-eos',
  'baseline-prefix-cache',
  'baseline',
  'baseline-top-p',
  'problems',
  'duration-s',
  'live-rounds',
  'repeat',
  'intra-op-threads',
  'vocab',
  'reps',
  'batch',
  'sizes',
  'vocabs',
  'batches',
  'threads',
  'ctx',
  'storage',
] as const;

export function usage(): string {
  const width = Math.max(...Object.keys(SUITES).map((s) => s.length));
  const rows = Object.entries(SUITES).map(([name, s]) => `  ${name.padEnd(width)}  ${s.duration.padStart(8)}  ${s.about}`);
  return [
    'usage: npm run bench -- <suite> [--json FILE] [--trace DIR] [--quick 1] [--key value ...]',
    '',
    `suites (rough time of a full run here; --quick 1 cuts each to a smoke run):`,
    ...rows,
    '',
    `--trace DIR: ${[...SERVING_SUITES].join(', ')} write one JSON-lines trace per server run`,
    'flags the suites read:',
    ...wrapped(
      SUITE_FLAGS.map((f) => `--${f}`),
      96,
      '  ',
    ),
  ].join('\n');
}

/** Words in lines of at most `width` characters, each line led by `indent` (60 flags on one line read as none). */
function wrapped(words: readonly string[], width: number, indent: string): string[] {
  const lines: string[] = [];
  let line = indent;
  for (const w of words) {
    if (line.length > indent.length && line.length + 1 + w.length > width) {
      lines.push(line);
      line = indent;
    }
    line += line.length > indent.length ? ` ${w}` : w;
  }
  if (line.length > indent.length) lines.push(line);
  return lines;
}

/** Suites that serve through the real server (runServingCase), whose runs --trace records. */
const SERVING_SUITES = new Set(['serving', 'length', 'concurrency', 'ablation', 'breakdown', 'combos', 'offline', 'transformers-js']);

export async function main(argv: string[]): Promise<number> {
  const [suite, ...rest] = argv;
  if (!suite || argv.includes('--help') || argv.includes('-h')) {
    console.log(usage());
    return suite ? 0 : 2;
  }
  const entry = SUITES[suite];
  if (!entry) {
    console.error(`error: unknown suite "${suite}"; suites: ${Object.keys(SUITES).join(', ')} (npm run bench -- --help)`);
    return 2;
  }
  let flags: Record<string, string>;
  try {
    // Every suite flag takes a value (`--quick 1`), as before.
    const options = Object.fromEntries(SUITE_FLAGS.map((f) => [f, { type: 'string' as const }]));
    const { values } = parseFlags({ args: rest, options });
    flags = Object.fromEntries(Object.entries(values).filter((kv): kv is [string, string] => typeof kv[1] === 'string'));
    // checked before any suite runs: a mistyped value is one line, not a failure minutes in
    servingFlags(new SuiteFlags(flags));
    checkTag(flags.tag);
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 2;
  }
  const { run } = await entry.load();
  if (flags.trace && !SERVING_SUITES.has(suite))
    console.error(`note: --trace is written by the suites that start servers (${[...SERVING_SUITES].join(', ')}); ${suite} writes none`);
  // Every suite's {suite, settings, results} and its tables leave through this one writer.
  const { output, ...report } = await run({ json: flags.json, flags });
  writeSuiteOutput(report, output ?? { tables: {} }, flags.tag);
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
      // A flag a suite found wrong is one line; anything else keeps its stack for debugging.
      console.error(e instanceof TokenRouterError ? `error: ${e.message}` : e instanceof Error ? e.stack : e);
      process.exit(e instanceof TokenRouterError ? 2 : 1);
    },
  );
}

// `tokenrouter eval`: accuracy, token shares and throughput of every algorithm on a task's validation or held-out problems.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { progress } from '../util/progressLine.ts';
import { printTable } from '../util/table.ts';
import { TokenRouterError } from '../errors.ts';
import { defaultPlan, evaluate, frontierSvg, headsPlan, singlesPlan } from '../eval/evaluate.ts';
import { MIX_GRID, chooseMixes, loadEnsembleChoice, mixEnsemble, mixPoint, type MixResult, type MixSpec } from '../eval/mixEnsemble.ts';
import { DEFAULT_TASK, loadTask } from '../eval/loadTask.ts';
import { TASK_SPLITS, type TaskSplitName } from '../../shared/task.ts';
import { calibratedPlan, chooseThresholds, loadCalibration } from '../eval/headCalibration.ts';
import { errorOverlap, pointsAgainst } from '../eval/pairedStats.ts';
import { loadModelFolder } from '../runner/modelFolder.ts';
import { TextTokenizer } from '../runner/tokenizer.ts';
import { WorkerRunner } from '../runner/workerRunner.ts';
import { TraceDir } from '../trace/traceDir.ts';
import { intFlag, parseFlags } from '../util/cliFlags.ts';

export async function evalCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: {
      task: { type: 'string', default: DEFAULT_TASK },
      split: { type: 'string', default: 'heldout' },
      plan: { type: 'string', default: 'default' },
      choose: { type: 'string' },
      problems: { type: 'string' },
      concurrency: { type: 'string', default: '8' },
      'max-tokens': { type: 'string', default: '128' },
      models: { type: 'string', default: 'examples/models' },
      json: { type: 'string' },
      out: { type: 'string', default: 'results/eval' },
      only: { type: 'string' },
      trace: { type: 'string' },
    },
  });
  const concurrency = intFlag('concurrency', values.concurrency, 1, 4096, 8);
  const maxTokens = intFlag('max-tokens', values['max-tokens'], 1, 100_000, 128);
  const modelsDir = path.resolve(values.models!);
  if (!(TASK_SPLITS as readonly string[]).includes(values.split!))
    throw new TokenRouterError('invalid_request', `unknown split "${values.split}"; splits: ${TASK_SPLITS.join(', ')}`, 'split');
  const task = loadTask(values.task!, modelsDir);
  const split = task.split(values.split as TaskSplitName);
  const n = intFlag('problems', values.problems, 1, split.problems.length, split.problems.length);
  const problems = split.problems.slice(0, n);
  const splitLine = `task ${task.header.name}, split ${split.split}: ${problems.length} of ${split.problems.length} problems of ${path.relative(process.cwd(), split.file)}${split.seed === undefined ? '' : ` (seed ${split.seed}; ${split.use})`}; graded by ${task.header.grader.kind}`;
  console.error(splitLine);
  if (!['default', 'ensemble', 'heads'].includes(values.plan!))
    throw new TokenRouterError('invalid_request', `unknown plan "${values.plan}"; plans: default, ensemble, heads`, 'plan');
  if (values.plan === 'heads' && split.split !== 'validation')
    throw new TokenRouterError('invalid_request', 'the heads plan calibrates thresholds: run it on --split validation', 'plan');
  if (values.choose && (values.plan === 'default' || split.split !== 'validation'))
    throw new TokenRouterError(
      'invalid_request',
      '--choose writes the ensemble weights or head thresholds chosen on validation: it needs --plan ensemble or heads and --split validation',
      'choose',
    );
  const names = ['small', 'medium', 'large'].filter((m) => fs.existsSync(path.join(modelsDir, m, 'onnx', 'model.onnx')));
  if (!names.includes('small') || !names.includes('large'))
    throw new TokenRouterError('not_found', `eval needs at least the small and large models under ${modelsDir}`, 'models');
  const smallFolder = loadModelFolder(path.join(modelsDir, 'small'));
  const tokenizer = TextTokenizer.fromFolder(smallFolder);
  // The ensemble plan runs the members and the weight grid; the default plan every algorithm and the mixes chosen on validation.
  const choiceFile = path.join(modelsDir, 'ensemble.json');
  const calibration = loadCalibration(path.join(modelsDir, 'small', 'routers', 'calibration.json'));
  let plan =
    values.plan === 'ensemble'
      ? singlesPlan(names)
      : values.plan === 'heads'
        ? headsPlan(names)
        : defaultPlan(names, calibration && calibratedPlan(calibration, true));
  let mixes: MixSpec[] =
    names.includes('medium') && values.plan !== 'heads' ? (values.plan === 'ensemble' ? [...MIX_GRID] : (loadEnsembleChoice(choiceFile)?.chosen ?? [])) : [];
  // Router-head points need their head in small's routers/routers.json: known before a run, not found after the points before them.
  const shipped = Object.keys(smallFolder.routers);
  const headless = plan.filter((p) => typeof p.params?.head === 'string' && !shipped.includes(p.params.head));
  if (headless.length > 0) {
    const missing = [...new Set(headless.map((p) => p.params!.head as string))].join(', ');
    if (values.plan === 'heads')
      throw new TokenRouterError(
        'invalid_request',
        `the heads plan calibrates router heads ${missing}, which ${smallFolder.dir} does not ship (has: ${shipped.join(', ') || 'none'}); train them with examples/training/trainRouters.py`,
        'plan',
      );
    console.error(`skipping ${headless.length} router-head points: ${smallFolder.dir} ships no ${missing} head (has: ${shipped.join(', ') || 'none'})`);
    plan = plan.filter((p) => !headless.includes(p));
  }
  if (values.only) {
    // Comma-separated name prefixes or factories; large-only stays in, as every paired test is against it.
    const only = values.only
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const keep = (name: string, factory?: string) => name === 'large-only' || only.some((o) => name.startsWith(o) || factory === o);
    plan = plan.filter((p) => keep(p.name, p.factory));
    mixes = mixes.filter((m) => keep(m.name));
  }
  console.error(`loading ${names.join(', ')} …`);
  const runners = new Map(await Promise.all(names.map(async (m) => [m, await WorkerRunner.start(path.join(modelsDir, m), { name: m })] as const)));
  const traceDir = values.trace ? new TraceDir(path.resolve(values.trace)) : undefined;
  const t0 = Date.now();
  // The machine is shared: throughputs mean little without the load they were measured under.
  const loadAtStart = os.loadavg()[0];
  let entryNo = 0;
  let last = '';
  try {
    const entries = await evaluate({
      runners,
      tokenizer,
      problems,
      grade: task.grade,
      plan,
      concurrency,
      maxTokens,
      traceDir,
      onProgress: (entry, done, total) => {
        if (entry !== last) {
          last = entry;
          entryNo++;
        }
        if (done % 10 === 0 || done === total) progress(`[${entryNo}/${plan.length}] ${entry}`, done, total);
      },
    });
    const mixResults: MixResult[] = [];
    for (const [k, spec] of mixes.entries()) {
      mixResults.push(
        await mixEnsemble(spec, {
          runners,
          tokenizer,
          problems,
          grade: task.grade,
          maxTokens,
          onProgress: (done, total) => progress(`[mix ${k + 1}/${mixes.length}] ${spec.name}`, done, total),
        }),
      );
    }
    printTable(
      entries.map((e) => ({
        name: e.name,
        kind: e.kind,
        accuracy: `${(e.accuracy * 100).toFixed(1)}%`,
        tok_s: e.throughput_tok_s,
        latency_ms: e.mean_latency_ms,
        handoffs_req: e.handoffs_per_request,
        share: Object.entries(e.token_share)
          .map(([m, s]) => `${m} ${(s * 100).toFixed(0)}%`)
          .join(' '),
      })),
    );
    const mixPoints = mixResults.map((m) =>
      mixPoint(
        m,
        entries.filter((e) => e.kind === 'single'),
        'large-only',
      ),
    );
    if (mixPoints.length) {
      console.log('\nME-mix (reference loop; accuracy against large-only and against its best member, McNemar p):');
      printTable(
        mixPoints.map((m) => ({
          name: m.name,
          accuracy: `${(m.accuracy * 100).toFixed(1)}%`,
          p_large: m.p_value ?? '-',
          consult: `${(m.consult_share * 100).toFixed(2)}%`,
          changed: `${(m.changed_share * 100).toFixed(3)}%`,
          best_member: m.best_member
            ? `${m.best_member.name} ${(m.best_member.accuracy * 100).toFixed(1)}% p=${m.best_member.p_value.toPrecision(3)} ${m.best_member.versus}`
            : '-',
        })),
      );
    }
    if (values.choose) {
      const chosen = values.plan === 'heads' ? chooseThresholds(entries, split.split) : chooseMixes(mixResults);
      fs.writeFileSync(values.choose, JSON.stringify(chosen, null, 1) + '\n');
      console.log(`wrote the ${values.plan === 'heads' ? 'router-head thresholds' : 'ensemble weights'} chosen on validation to ${values.choose}`);
    }
    fs.mkdirSync(values.out!, { recursive: true });
    const svg = path.join(values.out!, 'frontier.svg');
    const points = pointsAgainst(entries, 'large-only');
    fs.writeFileSync(svg, frontierSvg(points));
    const report = {
      suite: 'eval',
      settings: {
        task: task.header.name,
        task_source: task.source,
        grader: task.header.grader,
        split: split.split,
        plan: values.plan,
        problems: problems.length,
        split_size: split.problems.length,
        split_file: path.relative(process.cwd(), split.file),
        split_seed: split.seed ?? null,
        concurrency,
        maxTokens,
        decoding: 'greedy',
        mode: 'async-delayed, thresholds 1, state retained',
        wallSeconds: (Date.now() - t0) / 1000,
        load_average_1m: { start: loadAtStart, end: os.loadavg()[0] },
      },
      results: { entries: entries.map(({ correct, ...e }) => ({ ...e, correct_bits: correct.map((c) => (c ? '1' : '0')).join('') })) },
      points: [...points, ...mixPoints],
      error_overlap: errorOverlap(
        entries.filter((e) => e.kind === 'single'),
        'large-only',
      ),
    };
    const json = values.json ?? path.join(values.out!, 'eval.json');
    fs.mkdirSync(path.dirname(json), { recursive: true });
    fs.writeFileSync(json, JSON.stringify(report, null, 2));
    console.log(`\n${splitLine}\nwrote ${json} and ${svg}`);
    if (traceDir) console.log(`traces (open them in the timeline): ${traceDir.files.length} files in ${traceDir.dir}`);
    return 0;
  } finally {
    await Promise.all([...runners.values()].map((r) => r.close()));
  }
}

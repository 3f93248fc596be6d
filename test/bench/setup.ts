// Suite setup: per-request set-up on the entry, from the body's text to the request handed to its engine (JSON, validation, chat template, admission, actor).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chatRequestSchema } from '../../shared/api/openai.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { benchPrompt } from '../../runtime/loadgen/benchPrompt.ts';
import { generate, type GenerateSink } from '../../runtime/http/openai/requestPlan.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { planRequest } from '../../runtime/http/openai/requestPlan.ts';
import { parseBody } from '../../runtime/http/zodToError.ts';
import { percentile } from '../../runtime/util/stats.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { mainThreadCpuMs } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';

/** The entry's set-up budget per request, µs (docs/benchmarks.md, `setup`). */
const TARGET_US = 500;
/** Requests between yields to the event loop, so the engines take the arrivals and releases as a server's would. */
const YIELD_EVERY = 32;

interface Phases {
  json: number;
  validate: number;
  plan: number;
  generate: number;
}

const SINK: GenerateSink = { onToken: () => {}, onEnd: () => {} };

/**
 * What the chat route does before the request runs, timed per request: JSON.parse of the body text
 * (the body reader's work, `jsonBody`), the zod parse (the one validation), planRequest (chat template and token
 * checks), service.generate (resolving the algorithm, admission, the request's actor, the arrival
 * posted to its engine). Each request is cancelled after its timing, outside it.
 */
async function measure(
  service: TokenRouterService,
  model: string,
  prompt: (i: number) => string,
  n: number,
): Promise<{ us: number[]; phases: Phases; cpuUs: number | null }> {
  const us: number[] = [];
  const cpu0 = mainThreadCpuMs();
  const phases: Phases = { json: 0, validate: 0, plan: 0, generate: 0 };
  for (let i = 0; i < n; i++) {
    const text = JSON.stringify({ model, messages: [{ role: 'user', content: prompt(i) }], max_tokens: 64, temperature: 0, stream: true });
    const t0 = performance.now();
    const raw: unknown = JSON.parse(text);
    const t1 = performance.now();
    const body = parseBody(chatRequestSchema, raw);
    const t2 = performance.now();
    const plan = planRequest(service, 'chat', body, undefined);
    const t3 = performance.now();
    const handle = generate(service, plan.jobs[0].params, SINK);
    const t4 = performance.now();
    handle.cancel();
    us.push((t4 - t0) * 1000);
    phases.json += t1 - t0;
    phases.validate += t2 - t1;
    phases.plan += t3 - t2;
    phases.generate += t4 - t3;
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((r) => setImmediate(r));
  }
  for (const k of Object.keys(phases) as (keyof Phases)[]) phases[k] = (phases[k] * 1000) / n;
  const cpu1 = mainThreadCpuMs();
  return { us, phases, cpuUs: cpu0 === null || cpu1 === null ? null : ((cpu1 - cpu0) * 1000) / n };
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const requests = f.sized('requests', 2000, 200);
  const rounds = f.sized('rounds', 3, 1);
  const models = f.list('models', ['small', 'r2r']);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-bench-setup-'));
  // the server's default config over the bundled models: engines in threads beside their models
  const service = await TokenRouterService.start(parseServerConfig({ port: 0, dataDir, models: [{ name: 'small' }, { name: 'large' }] }), {});
  const cases = models.flatMap((model) => [
    // benchPrompt cycles through 500 problems: the tag (round, model, request) keeps every chat of the run distinct
    { model, prompts: 'distinct', prompt: (i: number, r: number) => `${benchPrompt(i)} (${r + 1}.${models.indexOf(model)}.${i})` },
    { model, prompts: 'repeated', prompt: () => benchPrompt(7) },
  ]);
  const byCase = cases.map(() => ({ medians: [] as number[], means: [] as number[], p90s: [] as number[], cpus: [] as number[], phases: [] as Phases[] }));
  let done = 0;
  try {
    // untimed: the first requests of a process pay for compiling the path
    for (const c of cases) await measure(service, c.model, (i) => c.prompt(i, -1), Math.min(requests, 300));
    for (let r = 0; r < rounds; r++) {
      for (const [k, c] of cases.entries()) {
        const m = await measure(service, c.model, (i) => c.prompt(i, r), requests);
        const acc = byCase[k];
        acc.medians.push(percentile(m.us, 50));
        acc.means.push(m.us.reduce((a, b) => a + b, 0) / m.us.length);
        acc.p90s.push(percentile(m.us, 90));
        acc.phases.push(m.phases);
        if (m.cpuUs !== null) acc.cpus.push(m.cpuUs);
        progress(`setup ${c.model} ${c.prompts} round ${r + 1}`, ++done, rounds * cases.length);
      }
    }
  } finally {
    await service.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  const med = (xs: number[]) => percentile(xs, 50);
  const results = cases.map((c, k) => {
    const a = byCase[k];
    const phase = (key: keyof Phases) => med(a.phases.map((p) => p[key]));
    return {
      model: c.model,
      prompts: c.prompts,
      median_us: med(a.medians),
      mean_us: med(a.means),
      p90_us: med(a.p90s),
      main_thread_cpu_us: a.cpus.length ? med(a.cpus) : null,
      phases_mean_us: { json: phase('json'), validate: phase('validate'), plan: phase('plan'), generate: phase('generate') },
      rounds_median_us: a.medians,
    };
  });
  const rows: Row[] = results.map((x) => ({
    model: x.model,
    prompts: x.prompts,
    median_us: x.median_us,
    mean_us: x.mean_us,
    p90_us: x.p90_us,
    cpu_us: x.main_thread_cpu_us ?? '-',
    json_us: x.phases_mean_us.json,
    validate_us: x.phases_mean_us.validate,
    plan_us: x.phases_mean_us.plan,
    generate_us: x.phases_mean_us.generate,
    target: x.median_us <= TARGET_US ? 'met' : 'missed',
  }));
  printTable(rows);
  const settings = {
    models,
    requests_per_case: requests,
    rounds: `${rounds}; figures are medians over rounds of each round's per-request median / mean / p90`,
    server:
      'TokenRouterService with the default config over the bundled small and large models (engines in threads beside their ONNX models), no HTTP listener',
    path: 'JSON.parse of the body text, zod parse (chatRequestSchema), planRequest (chat template, token checks, sampling), service.generate (algorithm resolved, admission, request actor, arrival posted to its engine); the request is cancelled after its timing, outside it',
    prompts:
      'distinct: a word problem tagged with its round, model and index, never asked before in the run (the chat-prompt cache misses); repeated: one conversation asked again and again (it hits)',
    request: 'stream true, max_tokens 64, temperature 0',
    warmup: 'up to 300 untimed requests per case first',
    median_us:
      'wall µs per request (performance.now around the four steps): the median is what a request costs when the thread is not preempted; the mean and p90 add the preemptions of a loaded machine',
    main_thread_cpu_us:
      "CPU of the main thread (/proc/self/task/<pid>/stat, 10 ms ticks) over a round ÷ its requests: the four steps plus the cancel and the engines' reports about it, robust to load",
    target_us: TARGET_US,
  };
  return { suite: 'setup', settings, results: { cases: results }, output: { tables: { 'Per-request set-up (µs)': rows } } };
}

// Suite predict: each built-in algorithm evaluated on validation problems through the live server, its committed tok/s at concurrency c predicted from that run, then measured under a closed loop of c over HTTP; and what an evaluation costs live traffic running beside it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { evaluateEventSchema, predictionCheckSchema, predictionSchema, type EvaluateEvent, type EvaluationResult } from '../../shared/api/evaluate.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { LIVE_MEMORY_MS, LIVE_SHARE } from '../../runtime/eval/evaluateDraft.ts';
import { DEFAULT_TASK, loadTask } from '../../runtime/eval/loadTask.ts';
import { startServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { SuiteFlags } from './suiteFlags.ts';

/** This process's main-thread CPU ms so far (Linux): what the entry, and the in-process client, spend there. */
function mainThreadCpuMs(): number {
  try {
    const f = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

async function evaluateOnce(
  url: string,
  model: string,
  problems: number,
  concurrency: number,
  maxTokens: number,
): Promise<{ result: EvaluationResult; wallMs: number; mainCpuMs: number }> {
  const t0 = performance.now();
  const cpu0 = mainThreadCpuMs();
  const res = await post(`${url}/admin/evaluate`, { model, problems, concurrency, maxTokens, client: `bench-${model}` });
  if (!res.ok) throw new Error(`evaluate ${model}: ${res.status} ${await res.text()}`);
  const lines = (await res.text()).split('\n').filter(Boolean);
  const last: EvaluateEvent = evaluateEventSchema.parse(JSON.parse(lines.at(-1)!));
  if (last.type !== 'result') throw new Error(`evaluate ${model}: ended with ${JSON.stringify(last)}`);
  return { result: last.result, wallMs: performance.now() - t0, mainCpuMs: mainThreadCpuMs() - cpu0 };
}

/**
 * A closed loop of `c` clients sending validation questions to `model` for `ms`: committed tokens per
 * second of wall time, and `clientMs`, each request's wall time at the client less its time at the
 * server (`Server-Timing: total`): the client's own part, which a prediction needs told.
 */
async function closedLoop(
  url: string,
  model: string,
  questions: readonly string[],
  c: number,
  ms: number,
  maxTokens: number,
): Promise<{ tokS: number; requests: number; tokens: number; mainCpuMs: number; clientMs: number }> {
  const end = performance.now() + ms;
  const t0 = performance.now();
  const cpu0 = mainThreadCpuMs();
  let tokens = 0;
  let requests = 0;
  let outside = 0;
  let k = 0;
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (performance.now() < end) {
        const q = questions[k++ % questions.length];
        const sent = performance.now();
        const res = await post(`${url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: q }], max_tokens: maxTokens, temperature: 0 });
        const body = (await res.json()) as { usage?: { completion_tokens: number } };
        if (!res.ok) throw new Error(`${model}: ${res.status} ${JSON.stringify(body)}`);
        const atServer = Number(/total;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')?.[1]);
        if (!Number.isFinite(atServer)) throw new Error(`${model}: the answer has no Server-Timing total`);
        outside += performance.now() - sent - atServer;
        tokens += body.usage!.completion_tokens;
        requests++;
      }
    }),
  );
  return {
    tokS: (tokens / (performance.now() - t0)) * 1000,
    requests,
    tokens,
    mainCpuMs: mainThreadCpuMs() - cpu0,
    clientMs: Math.max(0, outside / Math.max(1, requests)),
  };
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const algorithms = f.list('algorithms', ['r-stitch', 'citer', 'r2r', 'co-llm', 'me']);
  const concurrency = f.num('concurrency', 8);
  const problems = f.sized('problems', 100, 20);
  const maxTokens = f.num('max-tokens', 64);
  const measureMs = f.sized('duration-s', 12, 3) * 1000;
  const liveRounds = f.sized('live-rounds', 3, 1);
  // each algorithm evaluated, predicted and measured a second time straight after: how far each side moves on its own
  const repeat = f.bool('repeat', false);
  const loadStart = os.loadavg();
  const config = parseServerConfig({ port: 0, dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-predict-')), limits: { maxConcurrency: 16, maxTokens: 256 } });
  console.error('loading the bundled models …');
  const service = await TokenRouterService.start(config);
  const server = await startServer(service, 0, '127.0.0.1');
  const questions = loadTask(DEFAULT_TASK, config.modelsDir)
    .split('validation')
    .problems.map((p) => p.question);
  const rows: Row[] = [];
  const results: Record<string, unknown>[] = [];
  try {
    // warm every model (first steps pay for allocation)
    await closedLoop(server.url, 'me', questions, concurrency, 1500, maxTokens);
    // Live traffic before the first algorithm, as each later one has the loop before it: without it the first had no entry figure.
    // The entry's time per request is measured only while an evaluation runs or a prediction check watches: a check from here, as the timeline's check line.
    await fetch(`${server.url}/admin/prediction-check?algorithm=${algorithms[0]}&windowMs=5000`);
    // the clients' own time per request, as the last loop measured it: a property of this client, passed to each prediction
    let clientMs = (await closedLoop(server.url, 'me', questions, concurrency, measureMs / 2, maxTokens)).clientMs;
    let evalMs = 0;
    for (const algorithm of algorithms) {
      // the previous loop's traffic still counts as live for a moment (evaluateDraft.ts): an evaluation started at once would begin at one slot
      await new Promise((r) => setTimeout(r, LIVE_MEMORY_MS + 200));
      const { result, wallMs, mainCpuMs: evalCpu } = await evaluateOnce(server.url, algorithm, problems, concurrency, maxTokens);
      evalMs = Math.max(evalMs, wallMs);
      const predict = async (body: Record<string, unknown>, runId = result.runId) =>
        predictionSchema.parse(await (await post(`${server.url}/admin/evaluate/${runId}/predict`, body)).json());
      const p = await predict({ concurrency, clientMs });
      // the same run predicted for clients that take no time of their own: the two side by side
      const p0 = await predict({ concurrency });
      // the measurement runs with the thresholds in force, so the prediction for those is the one to check
      const predicted = (p.current ?? p.best).tokS;
      const predictedNoClient = (p0.current ?? p0.best).tokS;
      const band = (p.current ?? p.best).tokSBand;
      // the timeline's check watches from its first question: asked before and after the loop, it refits step latency from the serving window
      const check = async () =>
        predictionCheckSchema.parse(await (await fetch(`${server.url}/admin/prediction-check?algorithm=${algorithm}&windowMs=${measureMs + 5000}`)).json());
      await check();
      const measured = await closedLoop(server.url, algorithm, questions, concurrency, measureMs, maxTokens);
      const live = await check();
      const clientMsPassed = clientMs;
      clientMs = measured.clientMs;
      const diff = (predicted - measured.tokS) / measured.tokS;
      let again: { predicted_tok_s: number; measured_tok_s: number; predicted_moved: number; measured_moved: number; diff: number } | undefined;
      if (repeat) {
        const r2 = await evaluateOnce(server.url, algorithm, problems, concurrency, maxTokens);
        const p2 = await predict({ concurrency, clientMs: measured.clientMs }, r2.result.runId);
        const m2 = await closedLoop(server.url, algorithm, questions, concurrency, measureMs, maxTokens);
        const predicted2 = (p2.current ?? p2.best).tokS;
        again = {
          predicted_tok_s: predicted2,
          measured_tok_s: m2.tokS,
          predicted_moved: predicted2 / predicted - 1,
          measured_moved: m2.tokS / measured.tokS - 1,
          diff: (predicted2 - m2.tokS) / m2.tokS,
        };
        console.error(
          `${algorithm} again: predicted ${predicted2.toFixed(0)} (${(again.predicted_moved * 100).toFixed(1)} % from the first), measured ${m2.tokS.toFixed(0)} (${(again.measured_moved * 100).toFixed(1)} %), diff ${(again.diff * 100).toFixed(1)} %`,
        );
      }
      const diffNoClient = (predictedNoClient - measured.tokS) / measured.tokS;
      // the evaluation is itself a closed loop of c through the cluster (no HTTP): its own throughput, for comparison
      const evalTokS = result.tokS;
      results.push({
        algorithm,
        predicted_tok_s: predicted,
        predicted_band: band,
        measured_tok_s: measured.tokS,
        diff,
        in_band: measured.tokS >= band.low && measured.tokS <= band.high,
        predicted_no_client_tok_s: predictedNoClient,
        diff_no_client: diffNoClient,
        eval_tok_s: evalTokS,
        check_predicted_tok_s: live.predicted?.tokS ?? null,
        check_measured_tok_s: live.measured.tokS,
        check_mean_active: live.meanActive,
        check_band: live.predicted?.tokSBand ?? null,
        check_comparable: live.comparable,
        check_not_comparable: live.notComparable,
        eval_mean_in_flight: result.meanInFlight,
        eval_main_cpu_us_per_token: (evalCpu * 1000) / (result.meanOutputTokens * result.problems),
        http_main_cpu_us_per_token: (measured.mainCpuMs * 1000) / measured.tokens,
        http_main_cpu_share: measured.mainCpuMs / measureMs,
        eval_main_cpu_share: evalCpu / wallMs,
        http_requests: measured.requests,
        entry_ms: p.entryMs,
        transit_ms: p.transitMs,
        client_ms: clientMsPassed,
        client_ms_measured: measured.clientMs,
        live_batches: p.liveBatches,
        in_engine: (p.current ?? p.best).inEngine,
        accuracy: result.accuracy,
        handoffs_per_request: result.handoffsPerRequest,
        thresholds: (p.current ?? p.best).thresholds,
        ...(again ? { again } : {}),
      });
      rows.push({
        algorithm,
        accuracy: `${(result.accuracy * 100).toFixed(1)}%`,
        eval_s: wallMs / 1000,
        eval_tok_s: evalTokS,
        predicted_tok_s: predicted,
        band: `${band.low.toFixed(0)}–${band.high.toFixed(0)}`,
        measured_tok_s: measured.tokS,
        diff: `${(diff * 100).toFixed(1)}%`,
        client_ms: clientMsPassed,
        diff_no_client: `${(diffNoClient * 100).toFixed(1)}%`,
        check_pred: live.predicted?.tokS ?? NaN,
        check_meas: live.measured.tokS,
        check_like: live.comparable ? 'yes' : 'no',
      });
      console.error(
        `${algorithm}: evaluated ${problems} in ${(wallMs / 1000).toFixed(1)} s, predicted ${predicted.toFixed(0)} (${band.low.toFixed(0)}–${band.high.toFixed(0)}) tok/s with the clients' ${clientMsPassed.toFixed(1)} ms (${predictedNoClient.toFixed(0)} without), measured ${measured.tokS.toFixed(0)} tok/s (${(diff * 100).toFixed(1)} %, ${(diffNoClient * 100).toFixed(1)} % without)`,
      );
    }
    // An evaluation's cost to live traffic: r-stitch at c = 4 (what is left beside an evaluation's 8 slots of 16), alone and while an
    // evaluation of r2r runs, alternating for `live-rounds` rounds: one pair of windows moves by up to 2x on a shared machine, so the
    // spread of the rounds (and of the alone windows among themselves) says how much of a figure is noise.
    const live = 'r-stitch';
    const liveC = Math.max(1, Math.floor(concurrency / 2));
    const rounds: { alone_tok_s: number; beside_tok_s: number; cost: number; eval_s: number }[] = [];
    for (let k = 0; k < liveRounds; k++) {
      const alone = await closedLoop(server.url, live, questions, liveC, measureMs, maxTokens);
      // the live loop first: an evaluation started into an idle server takes its full concurrency until those requests end
      const besideRun = closedLoop(server.url, live, questions, liveC, measureMs, maxTokens);
      await new Promise((r) => setTimeout(r, 500));
      const [beside, evaluated] = await Promise.all([besideRun, evaluateOnce(server.url, 'r2r', problems, concurrency, maxTokens)]);
      const cost = 1 - beside.tokS / alone.tokS;
      rounds.push({ alone_tok_s: alone.tokS, beside_tok_s: beside.tokS, cost, eval_s: evaluated.wallMs / 1000 });
      console.error(
        `live ${live} at c=${liveC}, round ${k + 1}: ${alone.tokS.toFixed(0)} tok/s alone, ${beside.tokS.toFixed(0)} beside an evaluation of ${problems} (${(cost * 100).toFixed(1)} % less; evaluation ${(evaluated.wallMs / 1000).toFixed(1)} s)`,
      );
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = (xs: number[]) => Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / Math.max(1, xs.length - 1));
    const alones = rounds.map((r) => r.alone_tok_s);
    // pooled: all tokens beside over all tokens alone (equal windows), the figure the target is about
    const pooledCost = 1 - mean(rounds.map((r) => r.beside_tok_s)) / mean(alones);
    console.error(
      `live cost over ${liveRounds} rounds: pooled ${(pooledCost * 100).toFixed(1)} %, per round ${rounds.map((r) => (r.cost * 100).toFixed(1)).join(' / ')} %; alone windows vary by ${((sd(alones) / mean(alones)) * 100).toFixed(1)} % (sd/mean)`,
    );
    printTable(rows);
    return {
      suite: 'predict',
      settings: {
        models: 'bundled small/medium/large (ONNX, thread placement)',
        concurrency,
        problems,
        maxTokens,
        measureSeconds: measureMs / 1000,
        repeat,
        thresholds: 'those in force (1 each)',
        decoding: 'greedy',
        client: 'in-process fetch',
        client_time: 'clientMs measured on the loop before (client wall less Server-Timing total); predicted_no_client_tok_s without it',
        mode: config.scheduling.mode,
        load_start: loadStart,
        load: os.loadavg(),
      },
      results: {
        algorithms: results,
        evaluation: {
          problems,
          concurrency,
          slowest_s: evalMs / 1000,
          live_algorithm: live,
          live_concurrency: liveC,
          live_share: LIVE_SHARE,
          live_cost: pooledCost,
          live_cost_rounds: rounds,
          live_cost_sd: sd(rounds.map((r) => r.cost)),
          live_alone_cv: sd(alones) / mean(alones),
          eval_beside_s: Math.max(...rounds.map((r) => r.eval_s)),
        },
      },
      output: { tables: { predict: rows } },
    };
  } finally {
    await server.close();
    await service.close();
  }
}

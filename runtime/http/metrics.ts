// Prometheus metrics in vLLM's naming habits, read from the engines' lane counters on scrape and from requests as they end (never from trace events: the trace keeps only a window of them).
import client from 'prom-client';
import { RemoteEngine } from '../transport/nats/remoteEngine.ts';
import type { GenerateOutcome } from './openai/requestPlan.ts';
import type { TokenRouterService } from './tokenRouterService.ts';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class ServerMetrics {
  readonly registry = new client.Registry();
  readonly ttft = new client.Histogram({
    name: 'tokenrouter_time_to_first_token_seconds',
    help: 'Time to the first content: the first streamed chunk, or the whole answer of a non-streamed request',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly interToken = new client.Histogram({
    name: 'tokenrouter_inter_token_latency_seconds',
    help: 'Gap between streamed content chunks',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });
  readonly e2e = new client.Histogram({
    name: 'tokenrouter_e2e_request_latency_seconds',
    help: 'Request send to last chunk',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly requests = new client.Counter({
    name: 'tokenrouter_requests_total',
    help: 'Finished requests by outcome',
    labelNames: ['finish_reason'],
    registers: [this.registry],
  });
  readonly committed = new client.Counter({
    name: 'tokenrouter_committed_tokens_total',
    help: 'Committed output tokens by the model that produced them',
    labelNames: ['model'],
    registers: [this.registry],
  });
  readonly handoffs = new client.Counter({
    name: 'tokenrouter_handoffs_total',
    help: 'Handoffs between models, counted when their request ends',
    labelNames: ['algorithm'],
    registers: [this.registry],
  });
  readonly slowClientAborts = new client.Counter({
    name: 'tokenrouter_slow_client_aborts_total',
    help: 'Streamed requests cancelled because their client left more than limits.streamBufferBytes unsent',
    registers: [this.registry],
  });
  /** Labelled by the key's configured name, never the key; "(none)" for a missing or unknown key. */
  readonly keyRequests = new client.Counter({
    name: 'tokenrouter_api_key_requests_total',
    help: 'Inference API requests by API key name and outcome (accepted, rate_limited, invalid_api_key)',
    labelNames: ['key', 'outcome'],
    registers: [this.registry],
  });
  readonly keyTokens = new client.Counter({
    name: 'tokenrouter_api_key_tokens_total',
    help: 'Prompt and completion tokens of requests made with each API key, by key name',
    labelNames: ['key', 'kind'],
    registers: [this.registry],
  });
  readonly shed = new client.Counter({
    name: 'tokenrouter_requests_shed_total',
    help: 'Requests refused with 429 because their predicted queueing delay exceeded scheduling.slo.maxQueueDelayMs',
    registers: [this.registry],
  });

  constructor(service: TokenRouterService) {
    const r = [this.registry];
    const stats = () => service.cluster.laneStats();
    const gauge = (name: string, help: string, pick: (s: ReturnType<typeof stats>[number]) => number) =>
      new client.Gauge({
        name,
        help,
        labelNames: ['model'],
        registers: r,
        collect() {
          for (const s of stats()) this.set({ model: s.name }, pick(s));
        },
      });
    gauge('tokenrouter_requests_running', 'Requests ready or executing on a model', (s) => s.running);
    gauge('tokenrouter_requests_waiting', 'Requests waiting for KV admission on a model', (s) => s.waitingAdmission);
    gauge('tokenrouter_requests_pending_return', 'Requests away at a peer, state retained here', (s) => s.pendingReturn);
    gauge('tokenrouter_kv_cache_used_bytes', 'KV bytes held by live caches', (s) => s.kvBytes);
    gauge('tokenrouter_kv_cache_reserved_bytes', 'KV bytes reserved for admitted requests', (s) => s.kvReservedBytes);
    gauge('tokenrouter_batch_threshold', 'Delayed-batching threshold in force', (s) => s.threshold);
    // vLLM's prefix_cache_queries / prefix_cache_hits: tokens, counted by the engines and read as they stand
    const engineCounter = (name: string, help: string, pick: (s: ReturnType<typeof stats>[number]) => number) =>
      standingCounter(r, name, help, () => stats().map((s) => [s.name, pick(s)]));
    engineCounter('tokenrouter_prefix_cache_queries_total', 'Context tokens looked up in the prefix cache at admission', (s) => s.prefixQueries);
    engineCounter('tokenrouter_prefix_cache_hits_total', 'Context tokens found in the prefix cache (not prefilled)', (s) => s.prefixHits);
    // batches as the engines count them: rows ÷ passes is the mean batch, busy ÷ passes the mean step
    engineCounter('tokenrouter_forward_passes_total', 'Forward passes (batches) run by each model', (s) => s.batches);
    engineCounter('tokenrouter_batch_rows_total', 'Rows over all batches of each model (÷ forward passes: the mean batch)', (s) => s.rows);
    engineCounter('tokenrouter_model_busy_seconds_total', 'Time each model spent executing batches', (s) => s.busyMs / 1000);
    engineCounter(
      'tokenrouter_model_compute_seconds_total',
      'Time inside each model itself (ONNX Runtime run and router heads), of its busy time',
      (s) => s.modelMs / 1000,
    );
    new client.Gauge({
      name: 'tokenrouter_requests_queued',
      help: 'Requests waiting at the entry for a concurrency slot',
      registers: r,
      collect() {
        this.set(service.cluster.queuedCount);
      },
    });
    this.remoteMetrics(service);
    this.memoryMetrics(service);
  }

  /** memory.budgetMiB and its planned split, and the resident memory measured at scrape. */
  private memoryMetrics(service: TokenRouterService): void {
    const r = [this.registry];
    const { budgetBytes, baseBytes, headroomBytes, models } = service.memory;
    new client.Gauge({ name: 'tokenrouter_memory_budget_bytes', help: 'memory.budgetMiB: the resident memory the server plans within', registers: r }).set(
      budgetBytes,
    );
    const planned = new client.Gauge({
      name: 'tokenrouter_memory_planned_bytes',
      help: 'The planned split of the budget: the process before models (base), headroom, and per model its weights as loaded, step workspace and KV pool',
      labelNames: ['part', 'model'],
      registers: r,
    });
    planned.set({ part: 'base', model: '' }, baseBytes);
    planned.set({ part: 'headroom', model: '' }, headroomBytes);
    for (const m of models) {
      planned.set({ part: 'weights', model: m.name }, m.weightBytes);
      planned.set({ part: 'workspace', model: m.name }, m.workspaceBytes);
      if (Number.isFinite(m.kvBytes)) planned.set({ part: 'kv', model: m.name }, m.kvBytes);
    }
    new client.Gauge({
      name: 'tokenrouter_resident_memory_bytes',
      help: 'Resident set size of the server process, measured at scrape',
      registers: r,
      collect() {
        this.set(process.memoryUsage.rss());
      },
    });
  }

  /** Models served by remote engines (sub-servers over NATS): live replicas, placements, losses, reconnects, read on scrape. */
  private remoteMetrics(service: TokenRouterService): void {
    const r = [this.registry];
    const remotes = () => [...service.threads].filter((e): e is [string, RemoteEngine] => e[1] instanceof RemoteEngine);
    new client.Gauge({
      name: 'tokenrouter_remote_replicas',
      help: 'Live replicas of a model served over NATS',
      labelNames: ['model'],
      registers: r,
      collect() {
        for (const [m, engine] of remotes()) this.set({ model: m }, engine.replicaViews().length);
      },
    });
    const counter = (name: string, help: string, pick: (e: RemoteEngine) => number) =>
      standingCounter(r, name, help, () => remotes().map(([m, e]) => [m, pick(e)]));
    counter('tokenrouter_remote_placements_total', 'Requests placed on a replica of a remote model (their first visit)', (e) => e.stats.placed);
    counter(
      'tokenrouter_remote_replicas_lost_total',
      'Replicas declared lost (heartbeat timeout, a malformed message); drains are not losses',
      (e) => e.stats.replicasLost,
    );
    counter(
      'tokenrouter_remote_replicas_drained_total',
      'Replicas that left on purpose: drained (or shut down) and said goodbye',
      (e) => e.stats.replicasDrained,
    );
    counter('tokenrouter_remote_reconnects_total', 'Reconnects of the entry to NATS', (e) => e.stats.reconnects);
    counter('tokenrouter_remote_resent_messages_total', 'Engine messages sent again because a NATS outage may have lost them', (e) => e.resent);
  }

  observeRequest(o: GenerateOutcome, startedPerf: number, unary = true): void {
    const s = (performance.now() - startedPerf) / 1000;
    this.requests.inc({ finish_reason: o.finishReason });
    if (o.result.handoffs > 0) this.handoffs.inc({ algorithm: o.algorithm }, o.result.handoffs);
    if (o.finishReason === 'cancelled' || o.finishReason === 'error') return;
    this.e2e.observe(s);
    if (unary) this.ttft.observe(s);
    for (const [m, n] of Object.entries(o.result.tokensByModel)) if (n > 0) this.committed.inc({ model: m }, n);
  }
}

/**
 * A per-model counter read on scrape from counts the engines keep themselves (they only rise: an
 * engine lives as long as the service), so it is set to where they stand rather than incremented here.
 */
function standingCounter(registers: client.Registry[], name: string, help: string, read: () => [string, number][]): void {
  new client.Counter({
    name,
    help,
    labelNames: ['model'],
    registers,
    collect() {
      this.reset();
      for (const [model, n] of read()) this.inc({ model }, n);
    },
  });
}

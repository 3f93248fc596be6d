// The server's one config file: schema, defaults, and errors that name the key and what is wrong.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { SCHEDULING_MODES } from '../../shared/protocol/engineControl.ts';
import { TokenRouterError } from '../errors.ts';
import { remoteModelSchema } from './remoteModelConfig.ts';
import { apiKeysSchema, type ApiKeyConfig } from './apiKeyConfig.ts';
import { DTYPES, type Dtype } from '../runner/modelFolder.ts';
import { EXECUTION_PROVIDERS } from '../runner/onnxExport.ts';

/** Tool-call formats a model may be configured with (models[].toolCallParser). */
export const TOOL_CALL_PARSERS = ['hermes', 'llama3_json'] as const;
/** Thought markers a model may be configured with (models[].reasoningParser). */
export const REASONING_PARSERS = ['qwen3', 'deepseek_r1'] as const;
export type ToolCallParserName = (typeof TOOL_CALL_PARSERS)[number];
export type ReasoningParserName = (typeof REASONING_PARSERS)[number];

/** One entry of `models`. */
export const modelSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, dot, dash or underscore only'),
    /** Model folder; default `<modelsDir>/<name>`. */
    path: z.string().optional(),
    maxBatch: z.number().int().min(1).max(256).default(32),
    /**
     * Tokens one step of this model feeds at most, all rows together (vLLM's max_num_batched_tokens):
     * decode rows go first, and a longer prompt (or a handoff's unseen suffix) is fed in chunks across
     * steps, so requests already decoding keep streaming. It also sizes the step workspace the memory
     * plan sets aside. Below maxBatch it caps the decode rows of a step too.
     */
    maxStepTokens: z.number().int().min(1).max(1_048_576).default(256),
    /** Threads onnxruntime may use inside this model's worker. */
    intraOpNumThreads: z.number().int().min(1).max(64).default(1),
    /** The export variant, as transformers.js names them: picks onnx/model.onnx (fp32, the default), model_fp16.onnx, model_quantized.onnx (q8), model_int8, model_uint8, model_q4, model_q4f16 or model_bnb4.onnx. */
    dtype: z.enum(DTYPES as [Dtype, ...Dtype[]]).optional(),
    /** Where the model runs: cpu (the default) or cuda (needs onnxruntime-node's CUDA libraries). */
    executionProvider: z.enum(EXECUTION_PROVIDERS).optional(),
    /**
     * ONNX Runtime keeps a pre-packed copy of the weights for its GEMM kernels (default true). false
     * loads at a fraction of the weights' size instead of ~2x, for decode steps 20-30 % slower at batch 8 (qwen3-42m).
     */
    prepacking: z.boolean().default(true),
    /** Set: the model runs in `tokenrouter subserver` processes reached over NATS, not in a local worker. */
    remote: remoteModelSchema.optional(),
    /**
     * How this model writes tool calls (vLLM's --tool-call-parser): "hermes" (Qwen3, Hermes:
     * `<tool_call>{"name": …, "arguments": …}</tool_call>`) or "llama3_json" (Llama 3: a JSON object
     * `{"name": …, "parameters": …}`). Without one, requests with tools (other than tool_choice "none") are refused.
     */
    toolCallParser: z.enum(TOOL_CALL_PARSERS).optional(),
    /**
     * How this model marks its thought (vLLM's --reasoning-parser): "qwen3" or "deepseek_r1" (text
     * between `<think>` and `</think>`, returned as reasoning_content). Structured outputs then start after `</think>`.
     */
    reasoningParser: z.enum(REASONING_PARSERS).optional(),
  })
  .strict();

/**
 * scheduling.slo: p99 bounds "auto" keeps (it picks thresholds and maxWaitMs for goodput at the
 * arrival rate it measures), and the queueing-delay bound past which the entry answers 429.
 */
const sloSchema = z
  .object({
    /** p99 time per output token, ms. */
    tpotMs: z.number().positive().optional(),
    /** p99 time to first token, ms. */
    ttftMs: z.number().positive().optional(),
    /** A request whose predicted wait for a concurrency slot exceeds this is refused with 429 and Retry-After. */
    maxQueueDelayMs: z.number().positive().optional(),
  })
  .strict();

export const serverConfigSchema = z
  .object({
    port: z.number().int().min(0).max(65535).default(8080),
    host: z.string().default('127.0.0.1'),
    /**
     * Host names (besides loopback names, IP literals and `host`) that requests may carry in `Host`;
     * a leading dot allows subdomains. Anything else is refused, so a page on a rebound DNS name
     * cannot reach this server through the visitor's browser.
     */
    allowedHosts: z.array(z.string().min(1).max(253)).default([]),
    /** Where the algorithm registry (SQLite) and the admin token live. */
    dataDir: z.string().default('.tokenrouter'),
    modelsDir: z.string().default('examples/models'),
    // prefault: an absent block is parsed as if written out empty, so its defaults are the fields' own (one place)
    models: z
      .array(modelSchema)
      .min(1)
      .prefault([{ name: 'small' }, { name: 'medium' }, { name: 'large' }]),
    memory: z
      .object({
        /**
         * The server's resident memory, for every model on this machine: what the process holds before
         * loading models, each model as loaded (measured), the workspace of its largest step
         * (models[].maxStepTokens, measured by a warm-up step at load), headroomMiB, and KV caches
         * (the prefix cache among them) in what is left. Runners handed to the service (simulations,
         * tests) are not measured: there it bounds their KV alone.
         */
        budgetMiB: z.number().positive().default(1024),
        /** Kept out of the KV plan for the entry's own growth: its heap, sockets and stream buffers, ORT's allocations between steps. */
        headroomMiB: z.number().min(0).default(64),
      })
      .strict()
      .prefault({}),
    scheduling: z
      .object({
        mode: z.enum(SCHEDULING_MODES).default('async-delayed'),
        retainState: z.boolean().default(true),
        /** Per-model delayed-batching thresholds, or "auto" (the throughput model picks and re-picks them). */
        thresholds: z.union([z.literal('auto'), z.record(z.string(), z.number().int().min(1))]).default({}),
        maxWaitMs: z.number().positive().default(20),
        /** Refused by name: routing beside the model leaves no round trip for lookahead to hide (docs/runtime.md, "No lookahead"). */
        lookahead: z.never({ error: 'scheduling.lookahead was removed: routing runs beside the model, so there is no round trip to hide' }).optional(),
        /**
         * Where a local model's engine runs: "thread" (its scheduler, KV pool and routing beside the
         * model in the model's worker thread), "in-process" (on the entry's thread, the model alone in
         * a worker), or "auto" (the default): thread for ONNX model folders, in-process for runners
         * handed to the service (simulated runners, virtual clocks, tests), which have no thread to go to.
         */
        placement: z.enum(['auto', 'thread', 'in-process']).default('auto'),
        /** Engines keep finished requests' KV by token ids and start new requests from their longest cached prefix (vLLM's APC, SGLang's radix cache). */
        prefixCache: z.boolean().default(true),
        /** Latency targets: what thresholds "auto" keeps, and when the entry sheds load. */
        slo: sloSchema.optional(),
      })
      .strict()
      .prefault({}),
    limits: z
      .object({
        /** N: requests decoding at once. */
        maxConcurrency: z.number().int().min(1).default(16),
        /** Requests allowed to wait for a slot; beyond it, 429. */
        maxQueue: z.number().int().min(0).default(256),
        /** Upper bound on max_tokens. */
        maxTokens: z.number().int().min(1).default(256),
        maxBodyBytes: z
          .number()
          .int()
          .min(1024)
          .default(1 << 20),
        /** A request (headers and body) must arrive within this; a slow or endless body is cut with 408. */
        bodyTimeoutMs: z.number().int().min(100).default(30_000),
        /** Open TCP connections (live feed included); beyond it new ones are closed at once. */
        maxConnections: z.number().int().min(1).default(1024),
        /** Live-feed WebSocket clients at once; one more is refused with 503. */
        maxLiveClients: z.number().int().min(0).default(32),
        /** Unsent bytes a live-feed client may hold before it is disconnected (close 1008). */
        liveBufferBytes: z
          .number()
          .int()
          .min(16 * 1024)
          .default(4 << 20),
        /**
         * Unsent bytes one streamed answer may hold (what its client has not read yet, beyond the
         * kernel's socket buffer); past it the request is cancelled and the stream ended with an
         * error event, so a client that stops reading holds neither memory nor a slot.
         */
        streamBufferBytes: z
          .number()
          .int()
          .min(64 * 1024)
          .default(1 << 20),
        /**
         * Committed tokens per streamed chunk (vLLM's --stream-interval): the first chunk goes at once,
         * later ones when this many tokens have gathered, and the rest at the end. A request's
         * stream_interval overrides it. 1: a chunk per token (whatever arrives in one event-loop turn
         * still goes out as one).
         */
        streamInterval: z.number().int().min(1).max(1024).default(1),
        /**
         * On SIGTERM or SIGINT, how long running requests may take to finish while new ones get 503;
         * then the rest end with an error. 20 s fits under Kubernetes' default 30 s before SIGKILL.
         */
        shutdownGraceMs: z.number().int().min(0).default(20_000),
      })
      .strict()
      .prefault({}),
    trace: z
      .object({
        /**
         * Trace events the server keeps, the oldest leaving first (a ring): what GET /admin/trace
         * exports, an opened timeline starts from and a prediction reads the live traffic from. On
         * qwen3-42m at c = 8 a 64-token request made 15 events of ~0.8 KB of heap each, so the default
         * holds ~1,300 such requests in ~16 MiB, a quarter of memory.headroomMiB's default.
         */
        keepEvents: z.number().int().min(1000).max(1_000_000).default(20_000),
      })
      .strict()
      .prefault({}),
    defaultAlgorithm: z.string().default('r-stitch'),
    /** Bearer token for admin endpoints and the live feed; generated on first start when absent. */
    adminToken: z.string().min(16).optional(),
    /** On a loopback address, dev mode lets admin calls through without a token. */
    dev: z.boolean().default(true),
    /** Keys for /v1 (each named, with optional per-minute limits); with none, /v1 is open. `serve --api-key` and TOKENROUTER_API_KEY add to them. */
    apiKeys: apiKeysSchema.default([]),
    /** A JSON file holding more entries like apiKeys' (a list; it may hold only sha256 hashes), read relative to the config file. */
    apiKeysFile: z.string().optional(),
    /** One line per HTTP request on stdout (method, path, status, time, key name); off by default. */
    accessLog: z.boolean().default(false),
  })
  .strict();

export type ServerConfig = z.infer<typeof serverConfigSchema>;
/** The config's blocks as parsed (defaults filled): the shapes the cluster and its engines take their settings from. */
export type ModelConfig = z.infer<typeof modelSchema>;
export type SchedulingConfig = ServerConfig['scheduling'];
export type LimitsConfig = ServerConfig['limits'];

/** Validates a config object; the error lists every problem as `key.path: what is wrong`. */
export function parseServerConfig(raw: unknown, source = 'config'): ServerConfig {
  const r = serverConfigSchema.safeParse(raw ?? {});
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new TokenRouterError('invalid_request', `${source} is invalid:\n  ${lines.join('\n  ')}`, String(r.error.issues[0]?.path.join('.') ?? ''));
  }
  const cfg = r.data;
  const names = new Set<string>();
  for (const m of cfg.models) {
    if (names.has(m.name)) throw new TokenRouterError('invalid_request', `${source}: models: "${m.name}" is listed twice`, 'models');
    names.add(m.name);
  }
  if (cfg.scheduling.thresholds !== 'auto') {
    for (const k of Object.keys(cfg.scheduling.thresholds)) {
      if (!names.has(k))
        throw new TokenRouterError('invalid_request', `${source}: scheduling.thresholds.${k}: no model named "${k}"`, `scheduling.thresholds.${k}`);
    }
  }
  return cfg;
}

/** The TokenRouter package's folder: the bundled models (`examples/models`) and the default data folder live here. */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const hasKey = (raw: unknown, key: string): boolean => typeof raw === 'object' && raw !== null && Object.hasOwn(raw, key);

export function loadServerConfig(file: string | undefined): ServerConfig {
  if (!file) {
    // Defaults name the project's own folders, wherever the command is run from.
    const cfg = parseServerConfig({});
    return { ...cfg, dataDir: path.resolve(PROJECT_ROOT, cfg.dataDir), modelsDir: path.resolve(PROJECT_ROOT, cfg.modelsDir) };
  }
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new TokenRouterError('invalid_request', `cannot read config ${file}: ${(e as Error).message}`, 'config');
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new TokenRouterError('invalid_request', `config ${file} is not valid JSON: ${(e as Error).message}`, 'config');
  }
  const cfg = parseServerConfig(raw, path.basename(file));
  const apiKeys =
    cfg.apiKeysFile === undefined ? cfg.apiKeys : [...cfg.apiKeys, ...readKeyFile(path.resolve(path.dirname(path.resolve(file)), cfg.apiKeysFile))];
  // Paths the file spells out are relative to the file, as a user reading it would expect; a
  // default it leaves alone still names the project's folder (a file setting only dataDir must
  // not move the bundled models next to itself).
  const base = path.dirname(path.resolve(file));
  const from = (key: 'dataDir' | 'modelsDir') => path.resolve(hasKey(raw, key) ? base : PROJECT_ROOT, cfg[key]);
  return {
    ...cfg,
    dataDir: from('dataDir'),
    modelsDir: from('modelsDir'),
    apiKeys: checkedKeys(apiKeys, path.basename(file)),
    models: cfg.models.map((m) => (m.path === undefined ? m : { ...m, path: path.resolve(base, m.path) })),
  };
}

/** The entries of an apiKeysFile, checked by the same schema as the config's own. */
function readKeyFile(file: string): ApiKeyConfig[] {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new TokenRouterError('invalid_request', `apiKeysFile ${file}: ${(e as Error).message}`, 'apiKeysFile');
  }
  const r = apiKeysSchema.safeParse(raw);
  if (!r.success)
    throw new TokenRouterError(
      'invalid_request',
      `apiKeysFile ${file}: ${r.error.issues[0].path.join('.') || '(root)'}: ${r.error.issues[0].message}`,
      'apiKeysFile',
    );
  return r.data;
}

/** The config's keys and the key file's together: a name or key in both is refused as within one. */
function checkedKeys(keys: ApiKeyConfig[], source: string): ApiKeyConfig[] {
  const r = apiKeysSchema.safeParse(keys);
  if (!r.success) throw new TokenRouterError('invalid_request', `${source}: apiKeys with apiKeysFile: ${r.error.issues[0].message}`, 'apiKeys');
  return r.data;
}

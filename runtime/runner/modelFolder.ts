// Loads and validates a Hugging Face / Optimum style model folder (config, tokenizer, ONNX, routers).
import fs from 'node:fs';
import path from 'node:path';

/** The one error type for a model folder that cannot be used: names the file and, when known, the key. */
export class ModelFolderError extends Error {
  override readonly name = 'ModelFolderError';
  constructor(
    readonly folder: string,
    readonly file: string,
    readonly key: string | undefined,
    readonly problem: string,
  ) {
    super(`model folder ${folder}: ${file}${key ? ` key "${key}"` : ''}: ${problem}`);
  }
}

export interface ModelConfig {
  modelType: string;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  maxContext: number;
  bosTokenId: number;
  /** Every id that ends an answer: config.json's and generation_config.json's `eos_token_id` (an int or a list), in that order, each once. */
  eosTokenIds: number[];
  padTokenId: number;
}

/** The sampling defaults a folder's generation_config.json gives (absent: the request's or the server's own). */
export interface GenerationDefaults {
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  /** false: greedy unless the request sets a temperature (transformers' `do_sample`). */
  doSample?: boolean;
}

/** transformers.js' names for an export's variants and the file each picks in `onnx/`. */
export const DTYPE_FILES = {
  fp32: 'model.onnx',
  fp16: 'model_fp16.onnx',
  q8: 'model_quantized.onnx',
  int8: 'model_int8.onnx',
  uint8: 'model_uint8.onnx',
  q4: 'model_q4.onnx',
  q4f16: 'model_q4f16.onnx',
  bnb4: 'model_bnb4.onnx',
} as const;

export type Dtype = keyof typeof DTYPE_FILES;
export const DTYPES = Object.keys(DTYPE_FILES) as Dtype[];

export type RouterInputSource = 'hidden' | 'token' | 'topk_logits';

export interface RouterInputSpec {
  name: string;
  source: RouterInputSource;
  dtype: 'float32' | 'int64';
}

export interface RouterHeadSpec {
  name: string;
  file: string;
  inputs: RouterInputSpec[];
  /** Suggested routing threshold and the direction it applies in, from routers.json. */
  threshold?: number;
  routeWhen?: string;
}

export interface ModelFolder {
  dir: string;
  /** Folder name, used as the model name. */
  name: string;
  config: ModelConfig;
  /** Raw JSON of tokenizer.json and tokenizer_config.json (the latter may be empty). */
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  onnxPath: string;
  /** The variant `onnxPath` is (DTYPE_FILES). */
  dtype: Dtype;
  /** Files holding the graph's external data (`model.onnx_data`, `model.onnx_data_1`, ...), beside onnxPath; empty when the weights are inline. */
  externalData: string[];
  generation: GenerationDefaults;
  /** Router heads shipped in routers/routers.json, by name. */
  routers: Record<string, RouterHeadSpec>;
  /** top-k used by routers that read top-k logits (0 when none). */
  routerTopK: number;
  kvBytesPerToken: number;
}

function readJson(dir: string, file: string, required: boolean): Record<string, unknown> | undefined {
  const p = path.join(dir, file);
  if (!fs.existsSync(p)) {
    if (required) throw new ModelFolderError(dir, file, undefined, 'file is missing');
    return undefined;
  }
  let v: unknown;
  try {
    v = JSON.parse(fs.readFileSync(p, 'utf8'));
  } catch (e) {
    throw new ModelFolderError(dir, file, undefined, `not valid JSON (${(e as Error).message})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ModelFolderError(dir, file, undefined, 'expected a JSON object');
  return v as Record<string, unknown>;
}

function int(dir: string, file: string, obj: Record<string, unknown>, key: string, fallback?: number): number {
  const v = obj[key];
  if (v === undefined || v === null) {
    if (fallback !== undefined) return fallback;
    throw new ModelFolderError(dir, file, key, 'missing');
  }
  if (!isId(v)) throw new ModelFolderError(dir, file, key, `expected a non-negative integer, got ${JSON.stringify(v)}`);
  return v;
}

const isId = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;

/** `eos_token_id` as an int or a list of ints (Llama 3, Qwen3 list several); absent: none. */
function eosIds(dir: string, file: string, obj: Record<string, unknown> | undefined): number[] {
  const v = obj?.eos_token_id;
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  if (list.length === 0 || !list.every(isId))
    throw new ModelFolderError(dir, file, 'eos_token_id', `expected a non-negative integer or a non-empty list of them, got ${JSON.stringify(v)}`);
  return list;
}

/** A number key of generation_config.json in [min, max] (absent or null: undefined). */
function optNumber(dir: string, obj: Record<string, unknown>, key: string, min: number, max: number, integer = false): number | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
    throw new ModelFolderError(
      dir,
      'generation_config.json',
      key,
      `expected ${integer ? 'an integer' : 'a number'} in [${min}, ${max}], got ${JSON.stringify(v)}`,
    );
  }
  return v;
}

function generationDefaults(dir: string, gen: Record<string, unknown> | undefined): GenerationDefaults {
  if (!gen) return {};
  const out: GenerationDefaults = {};
  const temperature = optNumber(dir, gen, 'temperature', 0, 100);
  const topP = optNumber(dir, gen, 'top_p', 0, 1);
  // transformers' top_k 0 (and vLLM's -1) mean no cut
  const topK = optNumber(dir, gen, 'top_k', -1, 2 ** 31, true);
  const minP = optNumber(dir, gen, 'min_p', 0, 1);
  if (temperature !== undefined) out.temperature = temperature;
  if (topP !== undefined && topP > 0) out.topP = topP;
  if (topK !== undefined) out.topK = Math.max(topK, 0);
  if (minP !== undefined) out.minP = minP;
  if (gen.do_sample !== undefined && gen.do_sample !== null) {
    if (typeof gen.do_sample !== 'boolean')
      throw new ModelFolderError(dir, 'generation_config.json', 'do_sample', `expected true or false, got ${JSON.stringify(gen.do_sample)}`);
    out.doSample = gen.do_sample;
  }
  return out;
}

/** The export `dtype` picks in `onnx/`, and its external data files; a missing file names those present. */
function onnxFiles(dir: string, dtype: Dtype): { onnxPath: string; externalData: string[] } {
  const file = DTYPE_FILES[dtype];
  if (!file) throw new ModelFolderError(dir, 'onnx/', 'dtype', `unknown dtype ${JSON.stringify(dtype)} (known: ${DTYPES.join(', ')})`);
  const onnxDir = path.join(dir, 'onnx');
  const present = fs.existsSync(onnxDir) ? fs.readdirSync(onnxDir).sort() : [];
  const onnxPath = path.join(onnxDir, file);
  if (!present.includes(file)) {
    throw new ModelFolderError(dir, `onnx/${file}`, undefined, `file is missing (dtype ${dtype}; onnx/ holds: ${present.join(', ') || 'nothing'})`);
  }
  if (fs.statSync(onnxPath).size < 16) throw new ModelFolderError(dir, `onnx/${file}`, undefined, 'file is empty or truncated');
  const data = new RegExp(`^${file.replace(/\./g, '\\.')}_data(_[0-9]+)?$`);
  const externalData = present.filter((f) => data.test(f)).map((f) => path.join(onnxDir, f));
  return { onnxPath, externalData };
}

/** What loading a folder may choose: the export variant. */
export interface ModelFolderOptions {
  dtype?: Dtype;
}

/** Reads and checks everything a runner needs; throws ModelFolderError naming the first problem. */
export function loadModelFolder(dir: string, opts: ModelFolderOptions = {}): ModelFolder {
  const abs = path.resolve(dir);
  if (!fs.existsSync(abs) || !fs.statSync(abs).isDirectory()) throw new ModelFolderError(abs, '.', undefined, 'not a directory');
  const cfg = readJson(abs, 'config.json', true)!;
  const f = 'config.json';
  const hiddenSize = int(abs, f, cfg, 'hidden_size');
  const numHeads = int(abs, f, cfg, 'num_attention_heads');
  if (numHeads === 0) throw new ModelFolderError(abs, f, 'num_attention_heads', 'must be positive');
  const numKvHeads = int(abs, f, cfg, 'num_key_value_heads', numHeads);
  const headDim = int(abs, f, cfg, 'head_dim', Math.floor(hiddenSize / numHeads));
  const numLayers = int(abs, f, cfg, 'num_hidden_layers');
  if (cfg.eos_token_id === undefined || cfg.eos_token_id === null) throw new ModelFolderError(abs, f, 'eos_token_id', 'missing');
  const gen = readJson(abs, 'generation_config.json', false);
  const eosTokenIds = [...new Set([...eosIds(abs, f, cfg), ...eosIds(abs, 'generation_config.json', gen)])];
  const eosTokenId = eosTokenIds[0];
  const config: ModelConfig = {
    modelType: typeof cfg.model_type === 'string' ? cfg.model_type : 'unknown',
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: int(abs, f, cfg, 'vocab_size'),
    maxContext: int(abs, f, cfg, 'max_position_embeddings'),
    bosTokenId: int(abs, f, cfg, 'bos_token_id', eosTokenId),
    eosTokenIds,
    padTokenId: int(abs, f, cfg, 'pad_token_id', eosTokenId),
  };
  if (numKvHeads === 0 || numHeads % numKvHeads !== 0)
    throw new ModelFolderError(abs, f, 'num_key_value_heads', `must divide num_attention_heads (${numHeads})`);
  const tokenizerJson = readJson(abs, 'tokenizer.json', true)!;
  if (typeof tokenizerJson.model !== 'object' || tokenizerJson.model === null) throw new ModelFolderError(abs, 'tokenizer.json', 'model', 'missing');
  const tokenizerConfig = readJson(abs, 'tokenizer_config.json', false) ?? {};
  const vocabSize = config.vocabSize;
  const outside = eosTokenIds.find((t) => t >= vocabSize);
  if (outside !== undefined) throw new ModelFolderError(abs, f, 'eos_token_id', `${outside} is outside the vocabulary (vocab_size ${vocabSize})`);
  const generation = generationDefaults(abs, gen);
  const dtype = opts.dtype ?? 'fp32';
  const { onnxPath, externalData } = onnxFiles(abs, dtype);

  const routers: Record<string, RouterHeadSpec> = {};
  let routerTopK = 0;
  const rj = readJson(path.join(abs, 'routers'), 'routers.json', false);
  if (rj) {
    const rf = 'routers/routers.json';
    routerTopK = int(abs, rf, rj, 'topk', 0);
    const heads = rj.heads;
    if (typeof heads !== 'object' || heads === null) throw new ModelFolderError(abs, rf, 'heads', 'missing');
    for (const [name, raw] of Object.entries(heads as Record<string, unknown>)) {
      const h = raw as Record<string, unknown>;
      const file = typeof h.file === 'string' ? h.file : '';
      if (!file || !fs.existsSync(path.join(abs, 'routers', file)))
        throw new ModelFolderError(abs, rf, `heads.${name}.file`, `router file "${file}" is missing`);
      const inputs: RouterInputSpec[] = [];
      for (const [iname, spec] of Object.entries((h.inputs ?? {}) as Record<string, Record<string, unknown>>)) {
        const source = spec.source;
        if (source !== 'hidden' && source !== 'token' && source !== 'topk_logits')
          throw new ModelFolderError(abs, rf, `heads.${name}.inputs.${iname}.source`, `unknown source ${JSON.stringify(source)}`);
        inputs.push({ name: iname, source, dtype: spec.dtype === 'int64' ? 'int64' : 'float32' });
      }
      if (inputs.length === 0) throw new ModelFolderError(abs, rf, `heads.${name}.inputs`, 'no inputs');
      routers[name] = {
        name,
        file: path.join(abs, 'routers', file),
        inputs,
        threshold: typeof h.threshold === 'number' ? h.threshold : undefined,
        routeWhen: typeof h.route_when === 'string' ? h.route_when : undefined,
      };
    }
  }
  return {
    dir: abs,
    name: path.basename(abs),
    config,
    tokenizerJson,
    tokenizerConfig,
    onnxPath,
    dtype,
    externalData,
    generation,
    routers,
    routerTopK,
    // keys and values, all layers, float32
    kvBytesPerToken: 2 * numLayers * numKvHeads * headDim * 4,
  };
}

export interface ModelFolderStatus {
  name: string;
  dir: string;
  ok: boolean;
  /** The validation error when not ok. */
  error?: string;
  params?: { layers: number; hidden: number; vocab: number; maxContext: number; routers: string[] };
  /** What a runner loads: the variant, its file (relative to the folder), its external data files and the EOS ids that end an answer. */
  dtype?: Dtype;
  file?: string;
  externalData?: string[];
  eosTokenIds?: number[];
  /** The graph file and its external data, bytes. */
  onnxBytes?: number;
}

/** One folder's check status, as `tokenrouter models` prints it. */
export function modelFolderStatus(dir: string, opts: ModelFolderOptions = {}, name = path.basename(dir)): ModelFolderStatus {
  try {
    const m = loadModelFolder(dir, opts);
    return {
      name,
      dir: m.dir,
      ok: true,
      params: {
        layers: m.config.numLayers,
        hidden: m.config.hiddenSize,
        vocab: m.config.vocabSize,
        maxContext: m.config.maxContext,
        routers: Object.keys(m.routers),
      },
      dtype: m.dtype,
      file: path.relative(m.dir, m.onnxPath),
      externalData: m.externalData.map((f) => path.relative(m.dir, f)),
      eosTokenIds: m.config.eosTokenIds,
      onnxBytes: [m.onnxPath, ...m.externalData].reduce((a, f) => a + fs.statSync(f).size, 0),
    };
  } catch (e) {
    return { name, dir, ok: false, error: (e as Error).message };
  }
}

/** Lists every sub-folder of `root` that looks like a model (has config.json or onnx/), with its check status. */
export function listModelFolders(root: string, opts: ModelFolderOptions = {}): ModelFolderStatus[] {
  const abs = path.resolve(root);
  if (!fs.existsSync(abs)) return [];
  const out: ModelFolderStatus[] = [];
  for (const ent of fs.readdirSync(abs, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (!ent.isDirectory()) continue;
    const dir = path.join(abs, ent.name);
    if (!fs.existsSync(path.join(dir, 'config.json')) && !fs.existsSync(path.join(dir, 'onnx'))) continue;
    out.push(modelFolderStatus(dir, opts));
  }
  return out;
}

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
  eosTokenId: number;
  padTokenId: number;
}

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
  // some configs list several EOS ids: the first is the canonical one
  const x = Array.isArray(v) ? v[0] : v;
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) throw new ModelFolderError(dir, file, key, `expected a non-negative integer, got ${JSON.stringify(v)}`);
  return x;
}

/** Reads and checks everything a runner needs; throws ModelFolderError naming the first problem. */
export function loadModelFolder(dir: string): ModelFolder {
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
  const eosTokenId = int(abs, f, cfg, 'eos_token_id');
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
    eosTokenId,
    padTokenId: int(abs, f, cfg, 'pad_token_id', eosTokenId),
  };
  if (numKvHeads === 0 || numHeads % numKvHeads !== 0) throw new ModelFolderError(abs, f, 'num_key_value_heads', `must divide num_attention_heads (${numHeads})`);
  const tokenizerJson = readJson(abs, 'tokenizer.json', true)!;
  if (typeof tokenizerJson.model !== 'object' || tokenizerJson.model === null) throw new ModelFolderError(abs, 'tokenizer.json', 'model', 'missing');
  const tokenizerConfig = readJson(abs, 'tokenizer_config.json', false) ?? {};
  const onnxPath = path.join(abs, 'onnx', 'model.onnx');
  if (!fs.existsSync(onnxPath)) throw new ModelFolderError(abs, 'onnx/model.onnx', undefined, 'file is missing');
  if (fs.statSync(onnxPath).size < 16) throw new ModelFolderError(abs, 'onnx/model.onnx', undefined, 'file is empty or truncated');

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
      if (!file || !fs.existsSync(path.join(abs, 'routers', file))) throw new ModelFolderError(abs, rf, `heads.${name}.file`, `router file "${file}" is missing`);
      const inputs: RouterInputSpec[] = [];
      for (const [iname, spec] of Object.entries((h.inputs ?? {}) as Record<string, Record<string, unknown>>)) {
        const source = spec.source;
        if (source !== 'hidden' && source !== 'token' && source !== 'topk_logits') throw new ModelFolderError(abs, rf, `heads.${name}.inputs.${iname}.source`, `unknown source ${JSON.stringify(source)}`);
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
  onnxBytes?: number;
}

/** Lists every sub-folder of `root` that looks like a model (has config.json or onnx/), with its check status. */
export function listModelFolders(root: string): ModelFolderStatus[] {
  const abs = path.resolve(root);
  if (!fs.existsSync(abs)) return [];
  const out: ModelFolderStatus[] = [];
  for (const ent of fs.readdirSync(abs, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (!ent.isDirectory()) continue;
    const dir = path.join(abs, ent.name);
    if (!fs.existsSync(path.join(dir, 'config.json')) && !fs.existsSync(path.join(dir, 'onnx'))) continue;
    try {
      const m = loadModelFolder(dir);
      out.push({
        name: m.name,
        dir,
        ok: true,
        params: { layers: m.config.numLayers, hidden: m.config.hiddenSize, vocab: m.config.vocabSize, maxContext: m.config.maxContext, routers: Object.keys(m.routers) },
        onnxBytes: fs.statSync(m.onnxPath).size,
      });
    } catch (e) {
      out.push({ name: ent.name, dir, ok: false, error: (e as Error).message });
    }
  }
  return out;
}

// The shape of a Qwen3 or Llama 3 decoder (what config.json says of it), and its RoPE frequencies.

export type Family = 'qwen3' | 'llama';

/** Llama 3's `rope_scaling` (rope_type "llama3"). */
export interface Llama3RopeScaling {
  factor: number;
  low_freq_factor: number;
  high_freq_factor: number;
  original_max_position_embeddings: number;
  rope_type: 'llama3';
}

export interface DecoderArch {
  family: Family;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  /** May differ from hiddenSize / numHeads (Qwen3). */
  headDim: number;
  intermediateSize: number;
  vocabSize: number;
  maxPositions: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: Llama3RopeScaling | null;
  /** The LM head reuses the embedding table. */
  tiedEmbeddings: boolean;
  /** RMSNorm of each head's query and key over head_dim (Qwen3's q_norm / k_norm). */
  qkNorm: boolean;
}

/** Parameters, counting a tied table once. */
export function paramCount(a: DecoderArch): number {
  const attn = a.hiddenSize * a.numHeads * a.headDim * 2 + a.hiddenSize * a.numKvHeads * a.headDim * 2;
  const mlp = 3 * a.hiddenSize * a.intermediateSize;
  const norms = 2 * a.hiddenSize + (a.qkNorm ? 2 * a.headDim : 0);
  const table = a.vocabSize * a.hiddenSize;
  return a.numLayers * (attn + mlp + norms) + a.hiddenSize + table * (a.tiedEmbeddings ? 1 : 2);
}

export function checkArch(a: DecoderArch): void {
  for (const k of ['hiddenSize', 'numLayers', 'numHeads', 'numKvHeads', 'headDim', 'intermediateSize', 'vocabSize', 'maxPositions'] as const) {
    if (!Number.isInteger(a[k]) || a[k] < 1) throw new Error(`arch.${k} must be a positive integer, got ${a[k]}`);
  }
  if (a.numHeads % a.numKvHeads !== 0) throw new Error(`arch.numKvHeads (${a.numKvHeads}) must divide arch.numHeads (${a.numHeads})`);
  if (a.headDim % 2 !== 0) throw new Error(`arch.headDim must be even for RoPE, got ${a.headDim}`);
  if (!(a.rmsNormEps > 0)) throw new Error(`arch.rmsNormEps must be positive, got ${a.rmsNormEps}`);
  if (!(a.ropeTheta > 1)) throw new Error(`arch.ropeTheta must exceed 1, got ${a.ropeTheta}`);
}

/** RoPE's inverse frequencies over head_dim / 2 (transformers' default and llama3 rope types). */
export function ropeInvFreq(a: DecoderArch): Float32Array {
  const half = a.headDim / 2;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / a.ropeTheta ** ((2 * i) / a.headDim);
  const s = a.ropeScaling;
  if (!s) return inv;
  const lowWave = s.original_max_position_embeddings / s.low_freq_factor;
  const highWave = s.original_max_position_embeddings / s.high_freq_factor;
  for (let i = 0; i < half; i++) {
    const wave = (2 * Math.PI) / inv[i];
    if (wave > lowWave) inv[i] = inv[i] / s.factor;
    else if (wave >= highWave) {
      const smooth = (s.original_max_position_embeddings / wave - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      inv[i] = (1 - smooth) * (inv[i] / s.factor) + smooth * inv[i];
    }
  }
  return inv;
}

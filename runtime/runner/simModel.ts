// Simulated models for sub-servers started with --sim (tests and benches without ONNX exports), and their in-process twins.
import { SimRunner } from './simRunner.ts';
import { mix } from '../util/hash.ts';

/** Real-time step cost: base ms per step, plus ms per row, plus ms per token fed beyond one per row (prefill/extend). */
export interface SimLatency {
  baseMs: number;
  perRowMs: number;
  perTokenMs: number;
}

export interface SimModelOptions {
  name: string;
  latency: SimLatency;
  /**
   * "chars": the bundled models' 30-token character vocabulary; digit tokens with entropy and
   * router heads from the context hash (R-Stitch, CITER, R2R, Co-LLM really switch), EOS id 2
   * drawn with probability `eosRate`. "hash": SimRunner's default 1000-token hash model, no EOS.
   */
  vocab?: 'chars' | 'hash';
  eosRate?: number;
  maxContext?: number;
  kvBytesPerToken?: number;
}

/** Size of the bundled character vocabulary: 4 specials and 26 characters. */
export const CHAR_VOCAB_SIZE = 30;

/** Parses "base,perRow,perToken" (ms), e.g. "27.9,0,0.1". */
export function parseSimLatency(text: string): SimLatency {
  const parts = text.split(',').map((s) => Number(s.trim()));
  if (parts.length < 1 || parts.length > 3 || parts.some((n) => !Number.isFinite(n) || n < 0)) {
    throw new RangeError(`sim latency must be "base[,perRow[,perToken]]" in ms, got "${text}"`);
  }
  return { baseMs: parts[0], perRowMs: parts[1] ?? 0, perTokenMs: parts[2] ?? 0 };
}

/**
 * The same construction in a sub-server process and in-process, so the two produce identical
 * tokens for the same requests: what the distributed tests compare.
 */
export function simModel(opts: SimModelOptions): SimRunner {
  const { baseMs, perRowMs, perTokenMs } = opts.latency;
  const latency = (b: number, fed: number) => baseMs + perRowMs * b + perTokenMs * Math.max(0, fed - b);
  if ((opts.vocab ?? 'chars') === 'hash') {
    return new SimRunner({ name: opts.name, latency, maxContext: opts.maxContext, kvBytesPerToken: opts.kvBytesPerToken });
  }
  const salt = opts.name.length * 7919;
  const eosRate = opts.eosRate ?? 0;
  return new SimRunner({
    name: opts.name,
    vocabSize: CHAR_VOCAB_SIZE,
    eosTokenIds: [2],
    maxContext: opts.maxContext ?? 256,
    kvBytesPerToken: opts.kvBytesPerToken ?? 4096,
    latency,
    next: (ctx) => {
      const h = mix(ctx.contextHash, salt);
      const u = (h >>> 8) / 16777216;
      const token = u < eosRate ? 2 : 4 + (h % 10);
      const entropy = ((h >>> 4) % 1000) / 10000; // 0 … 0.1, around R-Stitch's τ = 0.03
      return { token, entropy, maxProb: 1 - entropy, heads: { citer: 1 - entropy * 1.5, r2r: entropy * 8, colm: entropy * 2 } };
    },
  });
}

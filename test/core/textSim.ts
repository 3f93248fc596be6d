// Scripted runners and tokenizers an engine thread loads by module reference, for the detokenising-across-handoffs test.
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { charTokenizer } from '../../runtime/runner/charTokenizer.ts';
import type { Decoder } from '../../runtime/runner/detokenizer.ts';
import { byteLevelTokenizer } from '../runner/byteLevelTokenizer.ts';

/** Model i writes request r's output token j as scripts[r][j], whichever model writes it: a handoff changes who writes, never what. */
export function scriptRunner(name: string, i: number, promptLength: number, scripts: Record<string, number[]>, vocabSize: number): SimRunner {
  return new SimRunner({
    name,
    vocabSize,
    eosTokenIds: [],
    latency: (b) => (i + 1) * (0.1 + b * 0.01),
    next: (ctx) => ({ token: scripts[ctx.requestId]?.[ctx.position - promptLength] ?? 4, entropy: 0, maxProb: 1 }),
  });
}

export function charDecoder(): Decoder {
  return charTokenizer();
}

export function byteDecoder(): Decoder {
  const { tok } = byteLevelTokenizer();
  return { decode: (ids) => tok.decode([...ids], { skip_special_tokens: true, clean_up_tokenization_spaces: false }) };
}

// Incremental detokenisation (vLLM's prefix/read offsets): the streamed text equals the full decode for
// char-level vocabularies (the bundled one, the fixture family's tokenizer.json) and byte-level ones whose
// tokens split multi-byte UTF-8 characters (emoji, CJK), over many random token sequences.
import fs from 'node:fs';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../shared/rng.ts';
import { charTokenizer } from '../../runtime/runner/charTokenizer.ts';
import type { Decoder } from '../../runtime/runner/detokenizer.ts';
import { IncrementalDetokenizer } from '../../runtime/trace/tokenTextSink.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { byteLevelTokenizer } from './byteLevelTokenizer.ts';
import { tinyModelDir } from '../support/tinyFamily.ts';

/** The shared seeded generator, so a failure names a reproducible seed. */
const rng = mulberry32;

/** Streams `ids` one token at a time; returns every delta and the flushed tail. */
function stream(tok: Decoder, ids: readonly number[]): { deltas: string[]; text: string } {
  const d = new IncrementalDetokenizer(tok);
  const deltas = ids.map((id) => d.push(id));
  deltas.push(d.flush());
  expect(d.text).toBe(deltas.join(''));
  return { deltas, text: deltas.join('') };
}

function exampleTokenizer(model: string): TextTokenizer {
  const dir = tinyModelDir(model);
  const read = (f: string) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Record<string, unknown>;
  const cfg = read('config.json') as { bos_token_id: number; eos_token_id: number };
  return new TextTokenizer(read('tokenizer.json'), read('tokenizer_config.json'), { bos: cfg.bos_token_id, eos: cfg.eos_token_id });
}

/**
 * A SentencePiece-style vocabulary with byte fallback (<0xE4> tokens, Llama's decoder chain:
 * ▁ -> space, bytes fused, the leading space stripped), the other way real models split characters.
 */
function byteFallbackTokenizer(): { tok: Tokenizer; vocabSize: number } {
  const vocab: [string, number][] = [
    ['<unk>', 0],
    ['<s>', 0],
    ['</s>', 0],
  ];
  for (let b = 0; b < 256; b++) vocab.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0]);
  for (const p of ['▁', '▁the', '▁and', 'hello', '▁world', 'a', 'b', 'c', '中', '▁中', 'é', '1', '2', '+', '=']) vocab.push([p, -1]);
  const specials = ['<unk>', '<s>', '</s>'].map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials,
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Prepend', prepend: '▁' },
        { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
      ],
    },
    pre_tokenizer: null,
    post_processor: null,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: { type: 'Unigram', unk_id: 0, vocab, byte_fallback: true },
  };
  return { tok: new Tokenizer(json, {}), vocabSize: vocab.length };
}

const hfDecoder = (tok: Tokenizer): Decoder => ({ decode: (ids) => tok.decode([...ids], { skip_special_tokens: true, clean_up_tokenization_spaces: false }) });

function checkRandomSequences(tok: Decoder, vocabSize: number, seed: number, runs = 300): number {
  const r = rng(seed);
  let partial = 0;
  for (let run = 0; run < runs; run++) {
    const ids = Array.from({ length: 1 + Math.floor(r() * 60) }, () => Math.floor(r() * vocabSize));
    const { deltas, text } = stream(tok, ids);
    expect(text, `seed ${seed} run ${run}: ${ids.join(',')}`).toBe(tok.decode(ids));
    if (deltas.slice(0, -1).some((d) => d === '')) partial++;
  }
  return partial;
}

describe('IncrementalDetokenizer', () => {
  it('char-level: the bundled char tokenizer and the example models tokenizer.json stream their full decode', () => {
    const bundled = charTokenizer();
    checkRandomSequences(bundled, 30, 1);
    for (const model of ['small', 'medium', 'large']) checkRandomSequences(exampleTokenizer(model), 30, 2);
    // One token, one character: nothing is held back, every token yields its text at once.
    const ids = bundled.encode('Q: 12*34=\nA: 408', false);
    expect(stream(bundled, ids).deltas.slice(0, -1)).toEqual(ids.map((i) => bundled.decode([i])));
  });

  it('byte-level BPE: tokens that split emoji and CJK characters hold back their partial character and stream the full decode', () => {
    const { tok, vocabSize } = byteLevelTokenizer();
    const dec = hfDecoder(tok);
    // Random ids: often invalid UTF-8 in the middle, which the full decode shows as U+FFFD, and so must the stream.
    const partial = checkRandomSequences(dec, vocabSize, 3, 500);
    expect(partial).toBeGreaterThan(0);
    // Real text encoded: every delta is whole characters, never a U+FFFD that a later token turns into one.
    const r = rng(4);
    const alphabet = ['😀', '🚀', '👍', '🎉', '中', '文', '字', '語', 'é', 'ü', 'ñ', 'hello', 'world', ' the', ' and', 'a', ' ', '1', '\n'];
    for (let run = 0; run < 300; run++) {
      const s = Array.from({ length: 1 + Math.floor(r() * 40) }, () => alphabet[Math.floor(r() * alphabet.length)]).join('');
      const ids = tok.encode(s, { add_special_tokens: false }).ids;
      expect(dec.decode(ids)).toBe(s);
      const { deltas, text } = stream(dec, ids);
      expect(text).toBe(s);
      for (const d of deltas) expect(d.includes('\uFFFD')).toBe(false);
    }
    // An emoji split across three tokens (F0 9F | 98 | 80): nothing until the last byte, then the whole emoji.
    const ids = tok.encode('a😀', { add_special_tokens: false }).ids;
    expect(ids.length).toBe(4);
    expect(stream(dec, ids).deltas).toEqual(['a', '', '', '😀', '']);
  });

  it('byte fallback (SentencePiece <0xNN> tokens, ▁ spaces, stripped leading space) streams the full decode', () => {
    const { tok, vocabSize } = byteFallbackTokenizer();
    const dec = hfDecoder(tok);
    checkRandomSequences(dec, vocabSize, 5, 500);
    // The encoder here does not fall back to bytes, so the ids are spelt out: 🚀 and 文 as <0xNN> bytes.
    const s = 'hello 🚀 中文 the é';
    const bytes = (c: string) => [...new TextEncoder().encode(c)].map((b) => `<0x${b.toString(16).toUpperCase()}>`);
    const pieces = ['hello', '▁', ...bytes('🚀'), '▁中', ...bytes('文'), '▁the', '▁', 'é'];
    const ids = pieces.map((p) => tok.token_to_id(p)!);
    expect(dec.decode(ids)).toBe(s);
    expect(stream(dec, ids).text).toBe(s);
  });

  it('a generation that ends on a partial character flushes it as the full decode shows it', () => {
    const { tok } = byteLevelTokenizer();
    const dec = hfDecoder(tok);
    const ids = tok.encode('ok😀', { add_special_tokens: false }).ids.slice(0, -1);
    const d = new IncrementalDetokenizer(dec);
    expect(ids.map((i) => d.push(i)).join('')).toBe('ok');
    expect(d.flush()).toBe('\uFFFD');
    expect(d.text).toBe(dec.decode(ids));
    expect(d.flush()).toBe('');
  });

  it('per-token cost at 1,024 tokens: full re-decode (before) vs incremental (after) - printed, not asserted', () => {
    const measure = (label: string, tok: Decoder, ids: number[]) => {
      const full = () => {
        const seen: number[] = [];
        let text = '';
        for (const id of ids) seen.push(id), (text = tok.decode(seen));
        return text;
      };
      const incremental = () => {
        const d = new IncrementalDetokenizer(tok);
        for (const id of ids) d.push(id);
        return d.text + d.flush();
      };
      expect(incremental()).toBe(full());
      const time = (f: () => string) => {
        f();
        const reps = 5;
        const t0 = performance.now();
        for (let i = 0; i < reps; i++) f();
        return (performance.now() - t0) / reps;
      };
      const before = time(full);
      const after = time(incremental);
      console.log(
        `[detokenize ${label}, ${ids.length} tokens] before: ${before.toFixed(2)} ms per request, ${((before / ids.length) * 1000).toFixed(1)} µs per token; ` +
          `after: ${after.toFixed(2)} ms per request, ${((after / ids.length) * 1000).toFixed(1)} µs per token (${(before / after).toFixed(0)}x)`,
      );
    };
    const r = rng(6);
    const example = exampleTokenizer('small');
    measure(
      'tiny fixture family char vocabulary',
      example,
      Array.from({ length: 1024 }, () => 4 + Math.floor(r() * 26)),
    );
    const { tok } = byteLevelTokenizer();
    const text = Array.from({ length: 600 }, (_, i) => ['hello', ' the', ' 中文', ' 😀', ' world', ' and', ' é'][i % 7]).join('');
    measure('byte-level BPE', hfDecoder(tok), tok.encode(text, { add_special_tokens: false }).ids.slice(0, 1024));
  });
});

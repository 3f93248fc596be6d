// A small byte-level BPE vocabulary (GPT-2 style) whose merged tokens split multi-byte characters: for detokenising tests.
import { Tokenizer } from '@huggingface/tokenizers';

/** GPT-2's byte <-> printable-character table, which byte-level BPE vocabularies are written in. */
function bytesToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) bs.push(b), cs.push(256 + n++);
  const out: string[] = [];
  bs.forEach((b, i) => (out[b] = String.fromCodePoint(cs[i])));
  return out;
}

/**
 * A byte-level BPE tokenizer (GPT-2 style: ByteLevel pre-tokenizer and decoder) run by
 * @huggingface/tokenizers: the 256 byte tokens, plus merged tokens that hold part of a character
 * (the first two bytes of an emoji, the last two of a CJK character) or whole words.
 */
export function byteLevelTokenizer(): { tok: Tokenizer; vocabSize: number } {
  const b2u = bytesToUnicode();
  const piece = (bytes: number[]) => bytes.map((b) => b2u[b]).join('');
  const vocab: Record<string, number> = { '<|endoftext|>': 0 };
  for (let b = 0; b < 256; b++) vocab[b2u[b]] = b + 1;
  const merges: string[] = [];
  const addMerged = (bytes: number[]) => {
    // Left-to-right merges, each of which the vocabulary holds.
    for (let k = 2; k <= bytes.length; k++) {
      const whole = piece(bytes.slice(0, k));
      if (whole in vocab) continue;
      merges.push(`${piece(bytes.slice(0, k - 1))} ${piece(bytes.slice(k - 1, k))}`);
      vocab[whole] = Object.keys(vocab).length;
    }
  };
  const enc = new TextEncoder();
  for (const s of ['😀', '🚀', '👍', '🎉']) addMerged([...enc.encode(s)].slice(0, 2)); // F0 9F: an emoji's first half
  for (const s of ['中', '文', '字', '語']) {
    const b = [...enc.encode(s)];
    addMerged(b.slice(1)); // a CJK character's last two bytes
    addMerged(b); // and the whole character
  }
  for (const s of ['é', 'ü', 'ñ']) addMerged([...enc.encode(s)]);
  for (const s of ['hello', 'world', ' the', ' and']) addMerged([...enc.encode(s)]);
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [{ id: 0, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  return { tok: new Tokenizer(json, { eos_token: '<|endoftext|>' }), vocabSize: Object.keys(vocab).length };
}

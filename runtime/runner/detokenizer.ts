// The incremental detokenizer beside the tokenizer (vLLM's detokenize_incrementally): each new token decodes a short window, not the whole output.
/** The one thing the detokenizer needs from a tokenizer. */
export interface Decoder {
  decode(ids: readonly number[]): string;
}

/**
 * Where one output's detokenising stands, as vLLM's detokenizer keeps it: each new token decodes only a short window (the tokens
 * since the prefix offset), never the whole output, so a token costs the same at position 10 and at position 10,000. The window's
 * first `read` tokens are text already emitted, kept as context: tokenizers whose decoders look at neighbours (a SentencePiece "▁"
 * that becomes a space except at the very start, byte-level pieces) decode the new tokens the same way the full output would.
 * Plain data holding only the window, so it travels with a handoff and the next engine continues it.
 */
export interface DetokState {
  ids: number[];
  /** ids[0..read) are context already emitted; ids[read..] are new. */
  read: number;
  /** decode(ids[0..read)), cached so each token decodes one window, not two. */
  prefixText: string;
}

const REPLACEMENT = '\uFFFD';

export function newDetokState(): DetokState {
  return { ids: [], read: 0, prefixText: '' };
}

/**
 * Adds one token; returns the text it completes: the window's decode minus the context's. A window ending in U+FFFD holds part of a
 * multi-byte UTF-8 character whose other bytes are still to come: nothing is emitted and the window stays put until it completes.
 */
export function detokPush(tok: Decoder, s: DetokState, token: number): string {
  const { ids } = s;
  ids.push(token);
  const windowText = tok.decode(ids);
  if (windowText.length <= s.prefixText.length || windowText.endsWith(REPLACEMENT)) return '';
  const delta = windowText.slice(s.prefixText.length);
  // the emitted context moves up to where the new text began: tokens before it are never decoded again
  ids.splice(0, s.read);
  s.read = ids.length;
  s.prefixText = tok.decode(ids);
  return delta;
}

/** Releases text held back for a character that never completed (the full decode shows it as U+FFFD), as generation ends. */
export function detokFlush(tok: Decoder, s: DetokState): string {
  if (s.read === s.ids.length) return '';
  const windowText = tok.decode(s.ids);
  const delta = windowText.length > s.prefixText.length ? windowText.slice(s.prefixText.length) : '';
  s.ids.length = 0;
  s.read = 0;
  s.prefixText = '';
  return delta;
}

/** Windows longer than this are decoded afresh (they are rare: a character in many pieces). */
const MEMO_WINDOW = 4;
const MEMO_ENTRIES = 1 << 16;

/** The detokenizer's windows are mostly the same few thousand one- or two-token pairs: each is decoded once (bounded: cleared when full). */
export function memoDecoder(tok: Decoder): Decoder {
  const memo = new Map<string, string>();
  return {
    decode(ids: readonly number[]): string {
      if (ids.length > MEMO_WINDOW) return tok.decode(ids);
      const key = ids.length === 1 ? String(ids[0]) : ids.join(',');
      let text = memo.get(key);
      if (text === undefined) {
        if (memo.size >= MEMO_ENTRIES) memo.clear();
        memo.set(key, (text = tok.decode(ids)));
      }
      return text;
    },
  };
}

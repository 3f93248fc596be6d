// Incremental detokenisation, as vLLM does it: each token decodes a short window.
//
// Incremental detokenisation as vLLM's detokenizer does it: each new token decodes only a short window
// (the tokens since the prefix offset), never the whole output, so a token costs the same at position 10
// and at position 10,000.
//
// The window's first `read` tokens are text already emitted, kept as context: tokenizers whose decoders
// look at neighbours (a SentencePiece "▁" that becomes a space except at the very start, byte-level
// pieces) decode the new tokens the same way the full output would. The new text is the window's decode
// minus the context's decode. When the window ends in U+FFFD, the last token(s) are part of a multi-byte
// UTF-8 character whose remaining bytes are still to come: nothing is emitted and the window stays put
// until the character completes (`flush` releases it when generation ends first, as the full decode would).
// The state is plain data holding only the window, so it travels with a handoff and the next engine
// continues it.

/** The one thing the detokenizer needs from a tokenizer. */
export interface Decoder {
  decode(ids: readonly number[]): string;
}

/** Where one output's detokenising stands: the window (context, then tokens not yet shown) and the context's text. */
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

/** Adds one token; returns the text it completes ('' while a character is still partial). */
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

/** Releases text held back for a character that never completed (the full decode shows it as U+FFFD). */
export function detokFlush(tok: Decoder, s: DetokState): string {
  if (s.read === s.ids.length) return '';
  const windowText = tok.decode(s.ids);
  const delta = windowText.length > s.prefixText.length ? windowText.slice(s.prefixText.length) : '';
  s.ids.length = 0;
  s.read = 0;
  s.prefixText = '';
  return delta;
}

/** One output detokenised in one place (the trace's token pieces, tests). */
export class IncrementalDetokenizer {
  private readonly state = newDetokState();
  private pushed = 0;
  private emittedText = '';

  constructor(private readonly tok: Decoder) {}

  /** Tokens pushed so far. */
  get length(): number {
    return this.pushed;
  }

  /** Everything emitted so far (the concatenation of every `push` result). */
  get text(): string {
    return this.emittedText;
  }

  push(token: number): string {
    this.pushed++;
    const delta = detokPush(this.tok, this.state, token);
    this.emittedText += delta;
    return delta;
  }

  flush(): string {
    const delta = detokFlush(this.tok, this.state);
    this.emittedText += delta;
    return delta;
  }
}

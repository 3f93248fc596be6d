// Incremental detokenisation as vLLM's detokenizer does it: each new token decodes only a short window
// (the tokens since `prefixOffset`), never the whole output, so a token costs the same at position 10
// and at position 10,000.
//
// `prefixOffset..readOffset` is text already emitted, kept as context: tokenizers whose decoders look at
// neighbours (a SentencePiece "▁" that becomes a space except at the very start, byte-level pieces)
// decode the new tokens the same way the full output would. The new text is the window's decode minus
// the context's decode. When the window ends in U+FFFD, the last token(s) are part of a multi-byte UTF-8
// character whose remaining bytes are still to come: nothing is emitted and the offsets stay put until
// the character completes (`flush` releases it when generation ends first, as the full decode would).

/** The one thing the detokenizer needs from a tokenizer. */
export interface Decoder {
  decode(ids: readonly number[]): string;
}

const REPLACEMENT = '\uFFFD';

export class IncrementalDetokenizer {
  private readonly ids: number[] = [];
  /** Start of the context window: tokens before it are never decoded again. */
  private prefixOffset = 0;
  /** End of the text already emitted; tokens from here on are new. */
  private readOffset = 0;
  /** `decode(ids[prefixOffset..readOffset])`, cached so each token decodes one window, not two. */
  private prefixText = '';
  private emittedText = '';

  constructor(private readonly tok: Decoder) {}

  /** Tokens pushed so far. */
  get length(): number {
    return this.ids.length;
  }

  /** Everything emitted so far (the concatenation of every `push` result). */
  get text(): string {
    return this.emittedText;
  }

  /** Adds one token; returns the text it completes ('' while a character is still partial). */
  push(token: number): string {
    this.ids.push(token);
    const windowText = this.tok.decode(this.ids.slice(this.prefixOffset));
    if (windowText.length <= this.prefixText.length || windowText.endsWith(REPLACEMENT)) return '';
    const delta = windowText.slice(this.prefixText.length);
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    this.prefixText = this.prefixOffset === this.readOffset ? '' : this.tok.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    this.emittedText += delta;
    return delta;
  }

  /** Releases text held back for a character that never completed (the full decode shows it as U+FFFD). */
  flush(): string {
    if (this.readOffset === this.ids.length) return '';
    const windowText = this.tok.decode(this.ids.slice(this.prefixOffset));
    const delta = windowText.length > this.prefixText.length ? windowText.slice(this.prefixText.length) : '';
    this.prefixOffset = this.readOffset = this.ids.length;
    this.prefixText = '';
    this.emittedText += delta;
    return delta;
  }
}

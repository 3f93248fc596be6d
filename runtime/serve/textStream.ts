// One request's output text as it grows: incremental detokenising, stop strings, and what may be shown yet.
import { IncrementalDetokenizer } from '../runner/incrementalDetokenizer.ts';
import type { TextTokenizer } from '../runner/tokenizer.ts';

export class TextStream {
  private readonly detok: IncrementalDetokenizer;
  private text = '';
  private emitted = 0;
  /** Where the first stop string begins, once one matched. */
  stopAt = -1;
  /** A stop string may still be forming in the last `hold` characters: they wait. */
  private readonly hold: number;

  constructor(
    tokenizer: TextTokenizer,
    private readonly stop: readonly string[],
    /** Stop strings are not matched before this many tokens (vLLM's min_tokens). */
    private readonly minTokens: number,
  ) {
    this.detok = new IncrementalDetokenizer(tokenizer);
    this.hold = Math.max(0, ...stop.map((s) => s.length - 1));
  }

  get stopped(): boolean {
    return this.stopAt >= 0;
  }

  /** Appends a committed token; returns the text it lets the client see now. */
  push(token: number): string {
    this.text += this.detok.push(token);
    if (this.detok.length >= this.minTokens) {
      for (const s of this.stop) {
        const k = this.text.indexOf(s, Math.max(0, this.emitted - s.length));
        if (k >= 0 && (this.stopAt < 0 || k < this.stopAt)) this.stopAt = k;
      }
    }
    const limit = this.stopAt >= 0 ? this.stopAt : this.text.length - this.hold;
    if (limit <= this.emitted) return '';
    const delta = this.text.slice(this.emitted, limit);
    this.emitted = limit;
    return delta;
  }

  /** The request ended: the whole text, and what of it the client has not seen yet. */
  finish(): { text: string; rest: string } {
    if (this.stopAt < 0) this.text += this.detok.flush();
    const text = this.stopAt >= 0 ? this.text.slice(0, this.stopAt) : this.text;
    return { text, rest: text.length > this.emitted ? text.slice(this.emitted) : '' };
  }
}

// A trace sink that adds each request's output text, one piece per token, to its request-end event, so the timeline can show words and not only token ids.
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import { detokFlush, detokPush, newDetokState, type Decoder } from '../runner/detokenizer.ts';

/**
 * Pieces as the stream emitted them: a token that ends inside a multi-byte character gets '' and the
 * token completing it gets the character, so the pieces join to the decoded output. Done once per
 * request, when it ends, on the entry's thread that already holds the tokenizer.
 */
export function tokenPieces(tok: Decoder, ids: readonly number[]): string[] {
  const d = new IncrementalDetokenizer(tok);
  const pieces = ids.map((id) => d.push(id));
  if (pieces.length > 0) pieces[pieces.length - 1] += d.flush();
  return pieces;
}

export function withTokenText(sink: TraceSink, tok: Decoder): TraceSink {
  return {
    emit(e: TraceEvent): void {
      sink.emit(e.type === 'request-end' && e.text === undefined ? { ...e, text: tokenPieces(tok, e.tokens) } : e);
    },
  };
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

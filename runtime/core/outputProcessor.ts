// The output processor beside the engine (vLLM v1's OutputProcessor, one request at a time): a committed token becomes its text delta, stop strings end the request.
import { detokFlush, detokPush, newDetokState, type Decoder } from '../runner/incrementalDetokenizer.ts';
import type { TextState } from '../../shared/protocol/engineProtocol.ts';
import type { RequestSpec } from './localRequest.ts';

/** A request's text before its first token; it then travels with every handoff, so whichever engine owns the request continues it. */
export function newTextState(): TextState {
  return { detok: newDetokState(), count: 0, tail: '', tailAt: 0, emitted: 0, stopAt: -1 };
}

/** Text is kept back as far as a stop string can reach, shown up to where one may still be forming; the tail travels, so one may span a handoff. */
export class OutputProcessor {
  private readonly tok: Decoder;

  constructor(tok: Decoder) {
    this.tok = memoDecoder(tok);
  }

  /** Appends a committed token; returns the text the client may see now. `s.stopAt >= 0` afterwards: a stop string matched. */
  push(s: TextState, spec: RequestSpec, token: number): string {
    s.tail += detokPush(this.tok, s.detok, token);
    s.count++;
    const stop = spec.text?.stop ?? [];
    let hold = 0;
    let reach = 0;
    if (stop.length > 0) {
      if (s.count >= spec.minTokens) {
        for (const str of stop) {
          const k = s.tail.indexOf(str, Math.max(0, s.emitted - str.length) - s.tailAt);
          if (k >= 0 && (s.stopAt < 0 || k + s.tailAt < s.stopAt)) s.stopAt = k + s.tailAt;
        }
      }
      for (const str of stop) reach = Math.max(reach, str.length);
      hold = reach - 1;
    }
    const limit = s.stopAt >= 0 ? s.stopAt : s.tailAt + s.tail.length - hold;
    if (limit <= s.emitted) return '';
    const delta = s.tail.slice(s.emitted - s.tailAt, limit - s.tailAt);
    s.emitted = limit;
    const keep = s.emitted - reach;
    if (keep > s.tailAt) {
      s.tail = s.tail.slice(keep - s.tailAt);
      s.tailAt = keep;
    }
    return delta;
  }

  /** The request ended on this engine: what the client has not seen yet (text held back, a character never completed). */
  finish(s: TextState): string {
    if (s.stopAt < 0) s.tail += detokFlush(this.tok, s.detok);
    const end = s.stopAt >= 0 ? s.stopAt : s.tailAt + s.tail.length;
    if (end <= s.emitted) return '';
    const rest = s.tail.slice(s.emitted - s.tailAt, end - s.tailAt);
    s.emitted = end;
    return rest;
  }
}

/** Windows longer than this are decoded afresh (they are rare: a character in many pieces). */
const MEMO_WINDOW = 4;
const MEMO_ENTRIES = 1 << 16;

/** The detokenizer's windows are mostly the same few thousand one- or two-token pairs: each is decoded once (bounded: cleared when full). */
function memoDecoder(tok: Decoder): Decoder {
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

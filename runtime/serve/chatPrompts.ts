// Rendered and encoded chat prompts, kept per message list: a repeated conversation skips the template and the tokenizer.
import type { ChatMessage, TextTokenizer } from '../runner/tokenizer.ts';

/** Conversations kept; the oldest goes first. */
const KEEP = 256;
/** Longer conversations are rendered every time: the key would cost what it saves, and memory stays small. */
const MAX_KEY_CHARS = 16_384;

/**
 * A template that reads no clock (`strftime_now`) is a pure function of the messages (one template
 * per service), so its ids can be reused for the same list; one that does is rendered every time.
 * Each caller gets its own copy of the ids.
 */
export class ChatPrompts {
  private readonly kept = new Map<string, readonly number[]>();

  constructor(private readonly tokenizer: TextTokenizer) {}

  ids(messages: readonly ChatMessage[]): number[] {
    const key = JSON.stringify(messages.map((m) => [m.role, m.content]));
    if (!this.tokenizer.templateIsPure || key.length > MAX_KEY_CHARS) return this.tokenizer.encodeChat(messages, true);
    const hit = this.kept.get(key);
    if (hit) {
      // most recently used last, so the oldest is evicted first
      this.kept.delete(key);
      this.kept.set(key, hit);
      return hit.slice();
    }
    const ids = this.tokenizer.encodeChat(messages, true);
    this.kept.set(key, ids.slice());
    if (this.kept.size > KEEP) this.kept.delete(this.kept.keys().next().value!);
    return ids;
  }
}

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

  /**
   * `variables`: the template's further variables (`tools`, vLLM's chat_template_kwargs); messages
   * may carry more than role and content (tool_calls, tool_call_id), all part of the key.
   */
  ids(messages: readonly ChatMessage[], variables: Readonly<Record<string, unknown>> = {}): number[] {
    const render = () => this.tokenizer.encode(this.tokenizer.applyChatTemplate(messages, true, variables), false);
    const key = JSON.stringify([messages, variables]);
    if (!this.tokenizer.templateIsPure || key.length > MAX_KEY_CHARS) return render();
    const hit = this.kept.get(key);
    if (hit) {
      // most recently used last, so the oldest is evicted first
      this.kept.delete(key);
      this.kept.set(key, hit);
      return hit.slice();
    }
    const ids = render();
    this.kept.set(key, ids.slice());
    if (this.kept.size > KEEP) this.kept.delete(this.kept.keys().next().value!);
    return ids;
  }
}

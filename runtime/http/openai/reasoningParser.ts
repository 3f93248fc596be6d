// A thinking model's thought split from its answer as the text streams (vLLM's --reasoning-parser): qwen3 and deepseek_r1.
import type { ReasoningParserName } from '../../config/serverConfig.ts';
import { heldPrefix } from './toolCallParser.ts';

export const THINK_OPEN = '<think>';
export const THINK_CLOSE = '</think>';

/**
 * Where the prompt leaves the thought: `closed` (the template closed it, as Qwen3's does with
 * enable_thinking false: everything is answer), `open` (the template opened it, as DeepSeek-R1's
 * does: the output starts inside it), `none` (the model opens it itself, or not at all).
 */
export type ThoughtAtStart = 'closed' | 'open' | 'none';

/** Read from the rendered prompt's last characters. */
export function thoughtAtStart(promptTail: string): ThoughtAtStart {
  const t = promptTail.trimEnd();
  return t.endsWith(THINK_CLOSE) ? 'closed' : t.endsWith(THINK_OPEN) ? 'open' : 'none';
}

export interface ReasoningPiece {
  reasoning: string;
  content: string;
}

/**
 * The thought is the text up to `</think>` (a leading `<think>` dropped). qwen3: an output that does
 * not open with `<think>` is all answer (unless the prompt opened the thought); deepseek_r1: the
 * output is thought until `</think>` whether or not it opens with `<think>`, as vLLM's parsers do.
 * An output that ends inside its thought is all thought.
 */
export class ReasoningParser {
  private buf = '';
  private state: 'start' | 'thought' | 'answer';

  constructor(
    private readonly name: ReasoningParserName,
    at: ThoughtAtStart,
  ) {
    this.state = at === 'closed' ? 'answer' : at === 'open' ? 'thought' : 'start';
  }

  push(text: string): ReasoningPiece {
    if (this.state === 'answer') return { reasoning: '', content: text };
    this.buf += text;
    const out: ReasoningPiece = { reasoning: '', content: '' };
    if (this.state === 'start') {
      if (this.buf.length < THINK_OPEN.length && THINK_OPEN.startsWith(this.buf)) return out;
      if (this.buf.startsWith(THINK_OPEN)) {
        this.buf = this.buf.slice(THINK_OPEN.length);
        this.state = 'thought';
      } else if (this.name === 'deepseek_r1') this.state = 'thought';
      else {
        this.state = 'answer';
        out.content = this.buf;
        this.buf = '';
        return out;
      }
    }
    const at = this.buf.indexOf(THINK_CLOSE);
    if (at >= 0) {
      out.reasoning = this.buf.slice(0, at);
      out.content = this.buf.slice(at + THINK_CLOSE.length);
      this.buf = '';
      this.state = 'answer';
      return out;
    }
    const keep = heldPrefix(this.buf, THINK_CLOSE);
    out.reasoning = this.buf.slice(0, this.buf.length - keep);
    this.buf = this.buf.slice(this.buf.length - keep);
    return out;
  }

  end(): ReasoningPiece {
    const rest = this.buf;
    this.buf = '';
    // a bare start that never became `<think>`: qwen3 takes it as answer
    if (this.state === 'start' && this.name === 'qwen3') return { reasoning: '', content: rest };
    return this.state === 'answer' ? { reasoning: '', content: rest } : { reasoning: rest, content: '' };
  }
}

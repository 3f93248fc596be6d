// A chat request's tools and tool_choice checked against the model's tool-call format, and the structural tag that enforces a required call.
import type { Tool } from '../../../shared/api/openaiConstraints.ts';
import type { ChatRequest } from '../../../shared/api/openai.ts';
import type { ToolCallParserName } from '../../config/serverConfig.ts';
import { TokenRouterError } from '../../errors.ts';
import { schemaText, type FieldGrammar } from './constraintPlan.ts';

export interface ToolPlan {
  /** The tools as the chat template gets them (OpenAI's objects, as vLLM passes them); none without tools. */
  templateTools?: Tool[];
  /** Parse calls out of the answer with this format (tool_choice not "none"). */
  parser?: ToolCallParserName;
  /** tool_choice "required" or a named function: the calls' grammar. */
  grammar?: FieldGrammar;
  /** Each function's parameters as a grammar, compiled before queueing so a bad schema is refused by its field (enforced or not). */
  schemas: FieldGrammar[];
}

/** How each family writes one call around its arguments, and between calls (as its parser reads them back). */
const CALL_SHAPE: Record<ToolCallParserName, { begin: (name: string) => string; end: string; separator: string }> = {
  hermes: { begin: (name) => `<tool_call>\n{"name": ${JSON.stringify(name)}, "arguments": `, end: '}\n</tool_call>', separator: '\n' },
  llama3_json: { begin: (name) => `{"name": ${JSON.stringify(name)}, "parameters": `, end: '}', separator: '; ' },
};

/**
 * `parser`: the model's toolCallParser from the server config (the algorithm's entry model), `model`
 * naming it in the error when a request needs one and it has none.
 */
export function planTools(body: ChatRequest, parser: ToolCallParserName | undefined, model: string): ToolPlan {
  const tools = body.tools ?? [];
  const choice = body.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
  const schemas = new Map<string, string>();
  tools.forEach((t, i) => {
    const param = `tools.${i}.function`;
    if (schemas.has(t.function.name)) throw new TokenRouterError('invalid_request', `${param}.name: "${t.function.name}" is given twice`, `${param}.name`);
    schemas.set(
      t.function.name,
      t.function.parameters === undefined ? '{"type": "object", "properties": {}}' : schemaText(t.function.parameters, `${param}.parameters`),
    );
  });
  const plan: ToolPlan = {
    schemas: [...schemas].map(([_name, schema], i) => ({ param: `tools.${i}.function.parameters`, grammar: { kind: 'json_schema', schema } })),
  };
  if (tools.length > 0) plan.templateTools = tools;
  if (choice === 'none') return plan;
  if (tools.length === 0) throw new TokenRouterError('invalid_request', `tool_choice ${JSON.stringify(choice)} needs tools`, 'tool_choice');
  if (parser === undefined) {
    throw new TokenRouterError(
      'invalid_request',
      `model "${model}" has no toolCallParser in the server config, so its tool calls cannot be read back (tool_choice "none" is accepted)`,
      'tools',
    );
  }
  plan.parser = parser;
  if (choice === 'auto') return plan;
  let names = [...schemas.keys()];
  if (typeof choice === 'object') {
    if (!schemas.has(choice.function.name)) {
      throw new TokenRouterError(
        'invalid_request',
        `tool_choice names function "${choice.function.name}", which is not among the tools (${names.join(', ')})`,
        'tool_choice',
      );
    }
    names = [choice.function.name];
  }
  const shape = CALL_SHAPE[parser];
  const tags = names.map((name) => ({
    type: 'tag',
    begin: shape.begin(name),
    content: { type: 'json_schema', json_schema: JSON.parse(schemas.get(name)!) as unknown },
    end: shape.end,
  }));
  const once = typeof choice === 'object' || body.parallel_tool_calls === false;
  const tag = { type: 'structural_tag', format: { type: 'tags_with_separator', tags, separator: shape.separator, at_least_one: true, stop_after_first: once } };
  plan.grammar = { param: typeof choice === 'object' ? 'tool_choice' : 'tools', grammar: { kind: 'structural_tag', tag: JSON.stringify(tag) } };
  return plan;
}

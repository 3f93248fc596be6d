// A request's structured-output fields (response_format, structured_outputs, guided_*) as one Constraint grammar, each bad one a 400 naming it.
import type { Constraint, GrammarSpec } from '../../../shared/protocol/constraint.ts';
import type { ChatRequest } from '../../../shared/api/openai.ts';
import type { CompletionRequest } from '../../../shared/api/openaiCompletions.ts';
import { TokenRouterError } from '../../errors.ts';
import type { OutputSpec } from './answerOutput.ts';
import { THINK_CLOSE } from './reasoningParser.ts';

/** A grammar and the request field it came from (named in any error about it). */
export interface FieldGrammar {
  grammar: GrammarSpec;
  param: string;
}

/**
 * A JSON Schema given as an object or its JSON text, returned as JSON text; whether it is a schema
 * the grammar engine compiles (xgrammar checks types, keywords and their values) is checked before
 * the request is queued, per vocabulary (constraintCheck.ts).
 */
export function schemaText(v: string | Record<string, unknown>, param: string): string {
  let schema: unknown = v;
  if (typeof v === 'string') {
    try {
      schema = JSON.parse(v);
    } catch (e) {
      throw new TokenRouterError('invalid_request', `${param} is not JSON: ${(e as Error).message}`, param);
    }
  }
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    throw new TokenRouterError('invalid_request', `${param} must be a JSON Schema (an object)`, param);
  }
  return JSON.stringify(schema);
}

function regexOf(pattern: string, param: string): GrammarSpec {
  if (pattern.length === 0) throw new TokenRouterError('invalid_request', `${param} is empty`, param);
  return { kind: 'regex', pattern };
}

/**
 * The one grammar the request's output fields ask for, or none. More than one (say response_format
 * and guided_regex, or two keys of structured_outputs) is refused naming the second: which one
 * should win is the client's call.
 */
export function requestedGrammar(body: ChatRequest | CompletionRequest): FieldGrammar | undefined {
  const found: FieldGrammar[] = [];
  const rf = body.response_format;
  if (rf?.type === 'json_object') found.push({ param: 'response_format', grammar: { kind: 'json_object' } });
  if (rf?.type === 'json_schema') {
    const param = 'response_format.json_schema.schema';
    found.push({ param, grammar: { kind: 'json_schema', schema: schemaText(rf.json_schema.schema, param) } });
  }
  const so = body.structured_outputs;
  if (so) {
    if (so.json !== undefined)
      found.push({ param: 'structured_outputs.json', grammar: { kind: 'json_schema', schema: schemaText(so.json, 'structured_outputs.json') } });
    if (so.regex !== undefined) found.push({ param: 'structured_outputs.regex', grammar: regexOf(so.regex, 'structured_outputs.regex') });
    if (so.choice !== undefined) found.push({ param: 'structured_outputs.choice', grammar: { kind: 'choice', choices: so.choice } });
    if (so.grammar !== undefined) found.push({ param: 'structured_outputs.grammar', grammar: { kind: 'ebnf', grammar: so.grammar } });
    if (so.json_object === true) found.push({ param: 'structured_outputs.json_object', grammar: { kind: 'json_object' } });
  }
  if (body.guided_json != null) found.push({ param: 'guided_json', grammar: { kind: 'json_schema', schema: schemaText(body.guided_json, 'guided_json') } });
  if (body.guided_regex != null) found.push({ param: 'guided_regex', grammar: regexOf(body.guided_regex, 'guided_regex') });
  if (body.guided_choice != null) found.push({ param: 'guided_choice', grammar: { kind: 'choice', choices: body.guided_choice } });
  if (body.guided_grammar != null) found.push({ param: 'guided_grammar', grammar: { kind: 'ebnf', grammar: body.guided_grammar } });
  if (found.length > 1) {
    throw new TokenRouterError('invalid_request', `${found[1].param} and ${found[0].param} both constrain the output; give one`, found[1].param);
  }
  return found[0];
}

/**
 * The grammar as a Constraint: after a reasoning model's thought (its `</think>` token), as vLLM
 * applies structured outputs, unless the prompt closed the thought already.
 */
export function constraintOf(
  tokenizer: { encode(text: string, addSpecial: boolean): number[] },
  g: FieldGrammar,
  output: OutputSpec,
): { constraint: Constraint; param: string } {
  if (!output.reasoning || output.reasoning.at === 'closed') return { constraint: { grammar: g.grammar }, param: g.param };
  const ids = tokenizer.encode(THINK_CLOSE, false);
  if (ids.length !== 1)
    throw new TokenRouterError(
      'invalid_request',
      `the model's reasoningParser needs ${THINK_CLOSE} to be one token of its vocabulary; it is ${ids.length}`,
      g.param,
    );
  return { constraint: { grammar: g.grammar, startAfter: ids }, param: g.param };
}

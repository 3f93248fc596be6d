// The playground's optional constraint and tools (response_format, tools, tool_choice): what the user typed, checked in the page and turned into request fields.

export type ResponseFormatKind = 'none' | 'json_object' | 'json_schema';

/** As typed: the schema and the tools stay text until a run, so a half-typed one is not lost. */
export interface PlaygroundOptions {
  format: ResponseFormatKind;
  /** A JSON Schema, or OpenAI's whole `json_schema` object ({name, schema, strict}). */
  schemaText: string;
  /** A JSON array of OpenAI tool definitions; empty: no tools. */
  toolsText: string;
  /** `auto`, `required`, `none`, or `function:<name>`. */
  toolChoice: string;
}

export const DEFAULT_OPTIONS: PlaygroundOptions = { format: 'none', schemaText: '', toolsText: '', toolChoice: 'auto' };

export type OptionField = 'schema' | 'tools' | 'tool_choice';

export interface OptionProblem {
  field: OptionField;
  message: string;
}

export type BuiltOptions = { ok: true; body: Record<string, unknown>; toolNames: string[] } | { ok: false; problems: OptionProblem[]; toolNames: string[] };

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const kindOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`);

/** The parse error of `text` with the line and column it stops at (V8 names only a position in some versions). */
export function jsonProblem(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (e) {
    // V8 echoes the start of the text ("…", "{"a": }" is not valid JSON): the user has it in front of them
    const msg = (e instanceof Error ? e.message : String(e)).replace(/, ".*" is not valid JSON$/s, '');
    const pos = /at position (\d+)/.exec(msg);
    if (!pos || /line \d+/.test(msg)) return msg;
    const before = text.slice(0, Number(pos[1]));
    const line = before.split('\n').length;
    const column = before.length - before.lastIndexOf('\n');
    return `${msg} (line ${line} column ${column})`;
  }
}

/** `{name, schema, strict}` as OpenAI's json_schema wants it, from a bare schema or that object pasted whole. */
function jsonSchemaField(text: string): { value?: Record<string, unknown>; problem?: string } {
  if (!text.trim()) return { problem: 'Schema: empty; paste a JSON Schema, e.g. {"type": "object", "properties": {…}}' };
  const bad = jsonProblem(text);
  if (bad) return { problem: `Schema: not valid JSON: ${bad}` };
  const v: unknown = JSON.parse(text);
  if (!isObject(v)) return { problem: `Schema: must be a JSON object (a JSON Schema), got ${kindOf(v)}` };
  if (isObject(v.schema) && typeof v.name === 'string') {
    if (!NAME.test(v.name)) return { problem: `Schema: name "${v.name}" must be 1-64 letters, digits, _ or -` };
    return { value: { strict: true, ...v } };
  }
  const name = typeof v.title === 'string' && NAME.test(v.title) ? v.title : 'response';
  return { value: { name, schema: v, strict: true } };
}

/** The tools' function names, or the first problem naming the entry (tools[i].function.name). */
function parseTools(text: string): { tools?: unknown[]; names: string[]; problem?: string } {
  const bad = jsonProblem(text);
  if (bad) return { names: [], problem: `Tools: not valid JSON: ${bad}` };
  const v: unknown = JSON.parse(text);
  if (!Array.isArray(v)) return { names: [], problem: `Tools: must be a JSON array of tool definitions, got ${kindOf(v)}` };
  const names: string[] = [];
  for (const [i, t] of v.entries()) {
    const at = `Tools: tools[${i}]`;
    if (!isObject(t)) return { names, problem: `${at} must be an object, got ${kindOf(t)}` };
    if (t.type !== 'function') return { names, problem: `${at}.type must be "function"` };
    const fn = t.function;
    if (!isObject(fn)) return { names, problem: `${at}.function must be an object with a name` };
    if (typeof fn.name !== 'string' || !NAME.test(fn.name)) return { names, problem: `${at}.function.name must be 1-64 letters, digits, _ or -` };
    if (names.includes(fn.name)) return { names, problem: `${at}.function.name "${fn.name}" is given twice` };
    if (fn.parameters !== undefined && !isObject(fn.parameters))
      return { names, problem: `${at}.function.parameters must be a JSON Schema object, got ${kindOf(fn.parameters)}` };
    names.push(fn.name);
  }
  return { tools: v, names };
}

/** Checks the options and gives the request fields they add; every problem names the field it is about. */
export function buildChatOptions(o: PlaygroundOptions): BuiltOptions {
  const body: Record<string, unknown> = {};
  const problems: OptionProblem[] = [];
  if (o.format === 'json_object') body.response_format = { type: 'json_object' };
  if (o.format === 'json_schema') {
    const s = jsonSchemaField(o.schemaText);
    if (s.problem) problems.push({ field: 'schema', message: s.problem });
    else body.response_format = { type: 'json_schema', json_schema: s.value };
  }
  let toolNames: string[] = [];
  if (o.toolsText.trim()) {
    const t = parseTools(o.toolsText);
    toolNames = t.names;
    if (t.problem) problems.push({ field: 'tools', message: t.problem });
    else if (t.tools!.length > 0) {
      body.tools = t.tools;
      if (o.toolChoice.startsWith('function:')) {
        const name = o.toolChoice.slice('function:'.length);
        if (!toolNames.includes(name))
          problems.push({ field: 'tool_choice', message: `Tool choice: names "${name}", which is not among the tools (${toolNames.join(', ')})` });
        else body.tool_choice = { type: 'function', function: { name } };
      } else body.tool_choice = o.toolChoice;
    }
  }
  return problems.length ? { ok: false, problems, toolNames } : { ok: true, body, toolNames };
}

// Issue 54 item 5: the playground's response format and tools are checked in the page, each problem naming its field, before anything is sent.
import { describe, expect, it } from 'vitest';
import { buildChatOptions, DEFAULT_OPTIONS, jsonProblem, type PlaygroundOptions } from '../../designer/src/designer/playgroundOptions.ts';

const opts = (o: Partial<PlaygroundOptions>) => buildChatOptions({ ...DEFAULT_OPTIONS, ...o });
const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

describe('playground options', () => {
  it('adds nothing by default, and json_object as OpenAI spells it', () => {
    expect(opts({})).toEqual({ ok: true, body: {}, toolNames: [] });
    expect(opts({ format: 'json_object' })).toMatchObject({ ok: true, body: { response_format: { type: 'json_object' } } });
  });

  it('wraps a bare schema as json_schema (named after its title) and takes the whole json_schema object as pasted', () => {
    const schema = { title: 'Answer', type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    expect(opts({ format: 'json_schema', schemaText: JSON.stringify(schema) })).toMatchObject({
      ok: true,
      body: { response_format: { type: 'json_schema', json_schema: { name: 'Answer', schema, strict: true } } },
    });
    expect(opts({ format: 'json_schema', schemaText: '{"type":"object"}' })).toMatchObject({
      body: { response_format: { json_schema: { name: 'response' } } },
    });
    const whole = { name: 'calc', schema: { type: 'object' }, strict: false };
    expect(opts({ format: 'json_schema', schemaText: JSON.stringify(whole) })).toMatchObject({
      body: { response_format: { type: 'json_schema', json_schema: whole } },
    });
  });

  it('refuses a schema that is empty, not JSON (with line and column) or not an object, naming the schema field', () => {
    const empty = opts({ format: 'json_schema', schemaText: '  ' });
    expect(empty).toMatchObject({ ok: false, problems: [{ field: 'schema', message: expect.stringMatching(/^Schema: empty/) }] });
    const broken = opts({ format: 'json_schema', schemaText: '{\n  "type": "object",\n  properties: {}\n}' });
    expect(broken).toMatchObject({ ok: false, problems: [{ field: 'schema', message: expect.stringMatching(/^Schema: not valid JSON: .*line 3 column 3/) }] });
    expect(opts({ format: 'json_schema', schemaText: '[1]' })).toMatchObject({
      ok: false,
      problems: [{ field: 'schema', message: 'Schema: must be a JSON object (a JSON Schema), got an array' }],
    });
    // the schema text is not checked unless the format asks for it
    expect(opts({ format: 'none', schemaText: '{oops' }).ok).toBe(true);
  });

  it('sends tools with the tool choice, a named function as OpenAI spells it', () => {
    const tools = JSON.stringify([weather]);
    expect(opts({ toolsText: tools })).toEqual({ ok: true, body: { tools: [weather], tool_choice: 'auto' }, toolNames: ['get_weather'] });
    expect(opts({ toolsText: tools, toolChoice: 'required' })).toMatchObject({ body: { tool_choice: 'required' } });
    expect(opts({ toolsText: tools, toolChoice: 'function:get_weather' })).toMatchObject({
      body: { tool_choice: { type: 'function', function: { name: 'get_weather' } } },
    });
  });

  it('refuses bad tools naming the entry, and a tool choice naming a missing function', () => {
    expect(opts({ toolsText: '{}' })).toMatchObject({
      ok: false,
      problems: [{ field: 'tools', message: 'Tools: must be a JSON array of tool definitions, got an object' }],
    });
    expect(opts({ toolsText: JSON.stringify([weather, { type: 'function', function: {} }]) })).toMatchObject({
      ok: false,
      problems: [{ field: 'tools', message: 'Tools: tools[1].function.name must be 1-64 letters, digits, _ or -' }],
      toolNames: ['get_weather'],
    });
    expect(opts({ toolsText: JSON.stringify([weather, weather]) })).toMatchObject({ problems: [{ message: expect.stringMatching(/given twice/) }] });
    expect(opts({ toolsText: JSON.stringify([weather]), toolChoice: 'function:lookup' })).toMatchObject({
      ok: false,
      problems: [{ field: 'tool_choice', message: 'Tool choice: names "lookup", which is not among the tools (get_weather)' }],
    });
  });

  it('reports every field with a problem at once', () => {
    const r = opts({ format: 'json_schema', schemaText: '{', toolsText: '[' });
    expect(r.ok ? [] : r.problems.map((p) => p.field)).toEqual(['schema', 'tools']);
  });

  it('jsonProblem is null for valid JSON and places the error otherwise', () => {
    expect(jsonProblem('{"a": 1}')).toBeNull();
    expect(jsonProblem('{"a": }')).toBe("Unexpected token '}'");
    expect(jsonProblem('{"a": 1,\n"b" 2}')).toMatch(/line 2 column 5/);
  });
});

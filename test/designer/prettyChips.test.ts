// Issue 54 item 5: constrained JSON output is shown indented while every character stays on the chip of the token (and model) that wrote it.
import { describe, expect, it } from 'vitest';
import type { StreamToken } from '../../designer/src/designer/api.ts';
import { mergeToolCalls } from '../../designer/src/designer/chatExtras.ts';
import { LAYOUT, prettyChips } from '../../designer/src/designer/prettyChips.ts';
import { tokenChips } from '../../designer/src/designer/tokenChips.ts';

const tok = (text: string, model = 'small', kept = true): StreamToken => ({
  id: 1,
  text,
  model,
  signals: { entropy: 0, maxProb: 1, margin: 1, heads: {} },
  decision: 'stay',
  kept,
});
const pretty = (
  tokens: StreamToken[],
  content = tokens
    .filter((t) => t.kept)
    .map((t) => t.text)
    .join(''),
) => prettyChips(tokenChips(tokens, content), tokens, content);

describe('prettyChips', () => {
  it('lays out JSON as JSON.stringify(…, null, 2) does, keeping each piece on its token', () => {
    const tokens = [
      tok('{"'),
      tok('name', 'large'),
      tok('": "'),
      tok('a, b', 'large'),
      tok('","'),
      tok('tags'),
      tok('":['),
      tok('1,'),
      tok(' 2', 'large'),
      tok('],"e":{}, "z": []}'),
    ];
    const chips = pretty(tokens)!;
    const content = tokens.map((t) => t.text).join('');
    expect(chips.map((c) => c.text).join('')).toBe(JSON.stringify(JSON.parse(content), null, 2));
    // text inside strings is untouched ("a, b" keeps its comma and space) and stays on the large model's token
    expect(chips.filter((c) => c.index === 3).map((c) => c.text)).toEqual(['a, b']);
    // the layout belongs to no token; every other chip is a token's
    expect(chips.filter((c) => c.index === LAYOUT).every((c) => /^\n */.test(c.text))).toBe(true);
    expect(chips.filter((c) => c.index === 8).map((c) => c.text)).toEqual(['2']);
  });

  it('handles escaped quotes and keeps a whitespace-only token as an empty chip', () => {
    const tokens = [tok('{'), tok('\n  '), tok('"q": "say \\"hi\\", ok"'), tok('}')];
    const chips = pretty(tokens)!;
    expect(chips.map((c) => c.text).join('')).toBe('{\n  "q": "say \\"hi\\", ok"\n}');
    expect(chips.find((c) => c.index === 1)).toEqual({ index: 1, text: '', continuation: false });
  });

  it('is null for text that is not a JSON object or array, or whose tokens do not spell the content', () => {
    expect(pretty([tok('hello')])).toBeNull();
    expect(pretty([tok('42')])).toBeNull();
    expect(pretty([tok('<think>x</think>'), tok('{}')], '{}')).toBeNull();
  });

  it('leaves discarded tokens where they were without moving the layout', () => {
    const tokens = [tok('{"a":'), tok('9', 'large', false), tok('1}')];
    const chips = pretty(tokens, '{"a":1}')!;
    expect(chips.map((c) => c.text)).toEqual(['{', '\n  ', '"a": ', '9', '1', '\n', '}']);
  });
});

describe('mergeToolCalls', () => {
  it('folds streamed pieces by index into whole calls, the name once', () => {
    let calls = mergeToolCalls([], [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }]);
    calls = mergeToolCalls(calls, [
      { index: 0, function: { arguments: '{"city":' } },
      { index: 1, id: 'call_2', function: { name: 'get_time', arguments: '{}' } },
    ]);
    calls = mergeToolCalls(calls, [{ index: 0, function: { name: 'get_weather', arguments: '"Paris"}' } }]);
    expect(calls).toEqual([
      { index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { index: 1, id: 'call_2', name: 'get_time', arguments: '{}' },
    ]);
  });
});

// Request-end events carry each output token's text: pieces as streamed (multi-byte characters whole), joined they are the answer's text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TraceEventOf } from '../../shared/trace.ts';
import { tokenPieces } from '../../runtime/trace/tokenTextSink.ts';
import { startTestServer, type TestServer } from '../http/testService.ts';

/** Byte-level decoding, as GPT-2 style tokenizers do: one id per UTF-8 byte, invalid sequences as U+FFFD. */
const bytes = { decode: (ids: readonly number[]) => Buffer.from(ids).toString('utf8') };

describe('tokenPieces', () => {
  it('gives a character split over several tokens to the token that completes it', () => {
    const ids = [...Buffer.from('a€b', 'utf8')];
    expect(ids).toHaveLength(5);
    expect(tokenPieces(bytes, ids)).toEqual(['a', '', '', '€', 'b']);
  });

  it('an output cut inside a character ends with what the full decode shows', () => {
    const ids = [...Buffer.from('a€', 'utf8')].slice(0, 3);
    expect(tokenPieces(bytes, ids).join('')).toBe(bytes.decode(ids));
  });
});

describe('the served trace', () => {
  let t: TestServer;
  beforeAll(async () => (t = await startTestServer({ traced: true })));
  afterAll(() => t.close());

  it('each request-end holds its text, piece by piece, equal to the answer', async () => {
    const r = await fetch(`${t.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'r-stitch', prompt: 'Q: 12*34=\nA: ', max_tokens: 20, temperature: 0 }),
    });
    const answer = (await r.json()) as { id: string; choices: { text: string }[] };
    const end = t.service.trace.events.find((e): e is TraceEventOf<'request-end'> => e.type === 'request-end' && e.requestId === answer.id);
    expect(end?.text).toHaveLength(20);
    expect(end!.text!.join('')).toBe(answer.choices[0].text);
  });
});

// Engines detokenise on their own threads: the streamed text equals the full decode although every token boundary is a handoff between two engine threads.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { buildAlgorithm } from '../../runtime/registry/algorithmSource.ts';
import { CHAR_VOCAB } from '../../runtime/runner/charTokenizer.ts';
import type { Decoder } from '../../runtime/runner/detokenizer.ts';
import { mulberry32 } from '../../shared/rng.ts';
import type { Algorithm } from '../../shared/algorithm.ts';
import type { AlgorithmRef } from '../../runtime/registry/algorithmSource.ts';
import { everyN } from './everyN.ts';
import { byteDecoder, charDecoder } from './textSim.ts';
import { byteLevelTokenizer } from '../runner/byteLevelTokenizer.ts';

const SIM = fileURLToPath(new URL('./textSim.ts', import.meta.url));
const EVERY = fileURLToPath(new URL('./everyN.ts', import.meta.url));
const PROMPT = [1, 5, 6, 7];

/**
 * everyN(2): small commits one token, hands the next position to large (discarding its own), large
 * commits it and hands back: every boundary between two output tokens is a handoff between threads.
 */
const handing: How = {
  algorithm: everyN(2) as Algorithm<unknown>,
  algorithmRef: { key: 'every-2', source: { kind: 'module' as const, module: EVERY, export: 'everyN', args: [2] } },
};
const alone: How = {
  algorithm: buildAlgorithm({ kind: 'single', model: 'small' }),
  algorithmRef: { key: 'single:small', source: { kind: 'single' as const, model: 'small' } },
};

type How = { algorithm: Algorithm<unknown>; algorithmRef: AlgorithmRef };

interface Streamed {
  result: RequestResult;
  /** The deltas as they were streamed, one per committed token, then the finish's. */
  deltas: string[];
}

/** Two engine threads reading `scripts`, each detokenising with `decoder` (a module export of textSim.ts). */
async function withThreads(
  scripts: Record<string, number[]>,
  vocabSize: number,
  decoder: 'charDecoder' | 'byteDecoder',
  fn: (run: (id: string, stop: string[], how?: How) => Promise<Streamed>) => Promise<void>,
): Promise<void> {
  const threads = await Promise.all(
    ['small', 'large'].map((n, i) =>
      ThreadEngine.start(n, {
        kind: 'module',
        module: SIM,
        export: 'scriptRunner',
        args: [n, i, PROMPT.length, scripts, vocabSize],
        tokenizer: { module: SIM, export: decoder },
      }),
    ),
  );
  const cluster = new Cluster({
    clock: createRealClock(),
    checkInvariants: true,
    maxWaitMs: 5,
    models: threads.map((thread) => ({ name: thread.name, thread })),
  });
  const run = async (id: string, stop: string[], how = handing): Promise<Streamed> => {
    const deltas: string[] = [];
    const result = await cluster.submit({
      id,
      prompt: PROMPT,
      maxTokens: scripts[id].length,
      ...how,
      text: { stop },
      onToken: (_t, _m, _i, _s, _h, text) => deltas.push(text),
    }).done;
    deltas.push(result.text.slice(deltas.join('').length));
    return { result, deltas };
  };
  try {
    await fn(run);
  } finally {
    await Promise.all(threads.map((t) => t.close()));
  }
}

/** The first k such that the first k tokens' decode holds a stop string, and the text before it (the full decode's, when none). */
function truth(dec: Decoder, script: readonly number[], stop: readonly string[]): { tokens: number; text: string; stopped: boolean } {
  for (let k = 1; k <= script.length; k++) {
    const text = dec.decode(script.slice(0, k));
    const at = Math.min(...stop.map((s) => text.indexOf(s)).filter((i) => i >= 0));
    if (Number.isFinite(at)) return { tokens: k, text: text.slice(0, at), stopped: true };
  }
  return { tokens: script.length, text: dec.decode(script), stopped: false };
}

function checkAgainstDecode(s: Streamed, dec: Decoder, script: readonly number[], stop: readonly string[] = []): void {
  const want = truth(dec, script, stop);
  const ctx = `${s.result.id}: ${script.join(',')}`;
  expect(s.result.status, `${ctx}: ${s.result.error?.message}`).toBe('done');
  expect(s.result.text, ctx).toBe(want.text);
  expect(s.deltas.join(''), ctx).toBe(want.text);
  expect(s.result.tokens, ctx).toEqual(script.slice(0, want.tokens));
  expect(s.result.finishReason, ctx).toBe(want.stopped ? 'stop' : 'length');
}

describe('detokenising on the engines, across handoffs between threads', () => {
  it('byte-level: a multi-byte character split over tokens on different engines, and random token sequences, stream their full decode', async () => {
    const { tok, vocabSize } = byteLevelTokenizer();
    const dec = byteDecoder();
    const byte = (b: number) => b + 1;
    const emoji = tok.encode('😀', { add_special_tokens: false }).ids;
    expect(emoji.length).toBeGreaterThan(1);
    const r = mulberry32(31);
    const scripts: Record<string, number[]> = {
      // "hello", 😀 in its pieces, é as its two bytes, "!": every piece boundary a handoff
      fixed: [...tok.encode('hello', { add_special_tokens: false }).ids, ...emoji, byte(0xc3), byte(0xa9), byte(0x21)],
      // the emoji's first half is the last token: the finish releases it as the full decode shows it
      dangling: [byte(0x41), emoji[0]],
    };
    for (let i = 0; i < 12; i++) scripts[`r${i}`] = Array.from({ length: 6 + Math.floor(r() * 30) }, () => 1 + Math.floor(r() * (vocabSize - 1)));
    await withThreads(scripts, vocabSize, 'byteDecoder', async (run) => {
      const fixed = await run('fixed', []);
      checkAgainstDecode(fixed, dec, scripts.fixed);
      // the emoji's pieces came from both engines, and the text waited for its last piece
      const at = scripts.fixed.indexOf(emoji[0]);
      expect(new Set(fixed.result.producedBy.slice(at, at + emoji.length)).size).toBe(2);
      expect(fixed.deltas.slice(at, at + emoji.length - 1).every((d) => d === '')).toBe(true);
      expect(fixed.deltas[at + emoji.length - 1]).toBe('😀');
      expect(fixed.deltas[at + emoji.length + 1]).toBe('é');
      const dangling = await run('dangling', []);
      checkAgainstDecode(dangling, dec, scripts.dangling);
      const random = await Promise.all(
        Object.keys(scripts)
          .filter((id) => id.startsWith('r'))
          .map((id) => run(id, [])),
      );
      for (const s of random) checkAgainstDecode(s, dec, scripts[s.result.id]);
    });
  }, 120_000);

  it('char-level: random sequences stream their full decode, and stop strings (one spanning handoffs) stop where one model stops', async () => {
    const dec = charDecoder();
    const ids = (text: string) => [...text].map((c) => CHAR_VOCAB.indexOf(c));
    const r = mulberry32(77);
    const scripts: Record<string, number[]> = { stop: ids('12+34=46\nQ: 7*8=56'), alone: ids('12+34=46\nQ: 7*8=56') };
    const stops: Record<string, string[]> = { stop: ['=46'], alone: ['=46'] };
    for (let i = 0; i < 10; i++) {
      const script = Array.from({ length: 8 + Math.floor(r() * 30) }, () => 4 + Math.floor(r() * (CHAR_VOCAB.length - 4)));
      scripts[`r${i}`] = script;
      const text = dec.decode(script);
      // half of them stop at a substring of their own text (two or three characters: it spans a handoff), one at text never written
      const from = Math.floor(r() * (text.length - 3));
      stops[`r${i}`] = i % 2 === 0 ? [text.slice(from, from + 2 + (i % 4 === 0 ? 1 : 0)), 'QQQQ'] : ['QQQQ'];
    }
    await withThreads(scripts, CHAR_VOCAB.length, 'charDecoder', async (run) => {
      const stopped = await run('stop', stops.stop);
      checkAgainstDecode(stopped, dec, scripts.stop, stops.stop);
      expect(stopped.result.text).toBe('12+34');
      // '=', '4', '6' were written by alternating engines, and nothing past the '6' was committed
      expect(new Set(stopped.result.producedBy.slice(5, 8)).size).toBe(2);
      expect(stopped.result.tokens.length).toBe(8);
      const one = await run('alone', stops.alone, alone);
      expect(one.result.producedBy.every((m) => m === 'small')).toBe(true);
      expect({ text: one.result.text, tokens: one.result.tokens, reason: one.result.finishReason }).toEqual({
        text: stopped.result.text,
        tokens: stopped.result.tokens,
        reason: stopped.result.finishReason,
      });
      const random = await Promise.all(
        Object.keys(scripts)
          .filter((id) => id.startsWith('r'))
          .map((id) => run(id, stops[id])),
      );
      for (const s of random) checkAgainstDecode(s, dec, scripts[s.result.id], stops[s.result.id]);
      expect(random.filter((s) => s.result.finishReason === 'stop').length).toBeGreaterThanOrEqual(5);
    });
  }, 120_000);
});

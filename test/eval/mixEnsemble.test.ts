// ME-mix's reference loop on the tiny fixture family, the validation choice and the paired comparison with its best member.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { finalAnswer } from '../../runtime/runner/onnxAccuracy.ts';
import { loadSplit } from '../../runtime/eval/splits.ts';
import { loadTask } from '../../runtime/eval/loadTask.ts';
import { chooseMixes, mixEnsemble, mixPoint, type MixResult } from '../../runtime/eval/mixEnsemble.ts';
import { errorOverlap } from '../../runtime/eval/pairedStats.ts';
import { soloGenerate } from '../runner/helpers.ts';
import { TINY_FAMILY_DIR, tinyModelDir } from '../support/tinyFamily.ts';

const N = 12;
const problems = loadSplit(TINY_FAMILY_DIR, 'validation').rows.slice(0, N);
const { grade } = loadTask('multiplication', TINY_FAMILY_DIR);
let runners: Map<string, OnnxRunner>;
let tok: TextTokenizer;

beforeAll(async () => {
  runners = new Map(await Promise.all(['medium', 'large'].map(async (m) => [m, await OnnxRunner.load(tinyModelDir(m))] as const)));
  tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
});
afterAll(async () => {
  for (const r of runners.values()) await r.close();
});

describe('mixEnsemble', () => {
  it('with one model weighted, decodes exactly that model’s greedy answers', async () => {
    const large = runners.get('large')!;
    const solo: boolean[] = [];
    for (const [i, p] of problems.entries()) {
      const out = await soloGenerate(large, 9000 + i, tok.encodeChat([{ role: 'user', content: p.question }]), 64);
      const text = tok.decode(out.filter((t) => !large.info.eosTokenIds.includes(t)));
      solo.push(finalAnswer(text) === p.answer);
      large.release(9000 + i);
    }
    const r = await mixEnsemble({ name: 'large alone', weights: { large: 1 } }, { runners, tokenizer: tok, problems, grade, maxTokens: 64, batch: 5 });
    expect(r.correct).toEqual(solo);
    expect(r.changed_share).toBe(0);
    expect(r.consult_share).toBe(0);
  });

  it('mixing counts the positions it consults at and the tokens it changes', async () => {
    const r = await mixEnsemble({ name: 'even', weights: { medium: 0.5, large: 0.5 } }, { runners, tokenizer: tok, problems, grade, maxTokens: 64 });
    // Even weights: the anchor is the first heaviest model (medium), consulted everywhere (bound 1 > any margin).
    expect(r.consult_share).toBe(1);
    expect(r.positions).toBeGreaterThan(N * 10);
    expect(r.correct).toHaveLength(N);
  });

  it('rejects weights that run no model and models that are not loaded', async () => {
    await expect(mixEnsemble({ name: 'none', weights: { large: 0 } }, { runners, tokenizer: tok, problems, grade, maxTokens: 8 })).rejects.toThrow(
      /every weight is 0/,
    );
    await expect(mixEnsemble({ name: 'small', weights: { small: 1 } }, { runners, tokenizer: tok, problems, grade, maxTokens: 8 })).rejects.toThrow(
      /model small is not loaded/,
    );
  });
});

const result = (name: string, weights: Record<string, number>, correct: boolean[], consult: number): MixResult => ({
  name,
  weights,
  rule: 'linear',
  accuracy: correct.filter(Boolean).length / correct.length,
  correct,
  consult_share: consult,
  changed_share: 0,
  positions: 10,
  seconds: 0,
});

describe('choosing and comparing mixes', () => {
  it('keeps the most accurate mix of each family, the cheaper one on a tie', () => {
    const c = chooseMixes([
      result('a', { medium: 0.3, large: 0.7 }, [true, false], 0.2),
      result('b', { medium: 0.2, large: 0.8 }, [true, false], 0.1),
      result('c', { small: 0.1, medium: 0.2, large: 0.7 }, [false, false], 0.1),
      result('d', { small: 0.2, medium: 0.2, large: 0.6 }, [true, true], 0.3),
    ]);
    expect(c.chosen.map((x) => x.name)).toEqual(['b', 'd']);
  });

  it('tests a mix against large-only and against its most accurate member', () => {
    // 20 problems: the mix is right on 18; medium on 10; large on 12, all of large's inside the mix's.
    const mixC = Array.from({ length: 20 }, (_, i) => i < 18);
    const large = Array.from({ length: 20 }, (_, i) => i < 12);
    const medium = Array.from({ length: 20 }, (_, i) => i >= 10);
    const small = Array.from({ length: 20 }, () => true);
    const singles = [
      { name: 'small-only', accuracy: 1, correct: small },
      { name: 'medium-only', accuracy: 0.5, correct: medium },
      { name: 'large-only', accuracy: 0.6, correct: large },
    ];
    const p = mixPoint(result('m+l', { medium: 0.3, large: 0.7 }, mixC, 0.1), singles, 'large-only');
    // small is not a member, so the best member is large; 6 discordant pairs all one way: p = 2/2^6.
    expect(p.best_member?.name).toBe('large-only');
    expect(p.p_value).toBeCloseTo(2 / 64, 12);
    expect(p.versus_reference).toBe('above');
    expect(p.tok_s).toBeNull();
    expect(errorOverlap(singles, 'large-only')).toEqual({
      reference: 'large-only',
      reference_wrong: 8,
      right_instead: { 'small-only': 8, 'medium-only': 8 },
      any_right: 8,
    });
  });
});

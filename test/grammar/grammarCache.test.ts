// The grammar library on a real-shaped Qwen3 vocabulary (151,936 ids, byte-level): compile and cache, clear refusals, and a state that follows a changing sequence.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { compileGrammar } from '../../runtime/grammar/grammarCache.ts';
import { checkConstraint } from '../../runtime/grammar/checkConstraint.ts';
import { ConstraintState, GrammarViolation, MAX_ROLLBACK_TOKENS } from '../../runtime/grammar/constraintState.ts';
import { folderVocabulary } from '../../runtime/grammar/modelVocabulary.ts';
import { vocabularyFromTokenizerJson, type GrammarVocabulary } from '../../runtime/grammar/vocabulary.ts';
import { loadXGrammar, type XGrammar } from '../../runtime/grammar/xgrammar.ts';
import type { GrammarSpec } from '../../shared/protocol/constraint.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';
import { charTokenizer } from '../../runtime/runner/charTokenizer.ts';

let vocab: GrammarVocabulary;
let tok: TextTokenizer;
let xg: XGrammar;

beforeAll(async () => {
  const folder = loadModelFolder(realShapeFolder('qwen3-tiny').dir);
  vocab = folderVocabulary(folder);
  tok = TextTokenizer.fromFolder(folder);
  xg = await loadXGrammar();
}, 120_000);

/** True when bit `id` of the mask is set. */
const allowed = (mask: Int32Array, id: number) => ((mask[id >>> 5] >>> (id & 31)) & 1) === 1;

function state(spec: GrammarSpec, promptLength: number, startAfter?: number[]): Promise<ConstraintState> {
  return compileGrammar(spec, vocab).then((c) => new ConstraintState(xg, c, promptLength, startAfter));
}

describe('vocabulary', () => {
  it('reads the Qwen3 tokenizer as byte-level, padded to the logits width, ending at the EOS ids', () => {
    expect(vocab.type).toBe('byte_level');
    expect(vocab.vocabSize).toBe(151_936);
    expect(vocab.encoded.length).toBe(151_936);
    expect(vocab.encoded[151_645]).toBe('<|im_end|>');
    expect(vocab.encoded[151_935]).toBe('');
    expect(vocab.stopTokenIds.length).toBeGreaterThan(0);
  });

  it('the bundled char tokenizer is raw, and a different vocabulary is refused naming both models', async () => {
    const c = charTokenizer();
    const chars = vocabularyFromTokenizerJson('small', c.tokenizerJson, 64, [2]);
    expect(chars.type).toBe('raw');
    expect(chars.key).not.toBe(vocab.key);
    const err = await checkConstraint({ grammar: { kind: 'json_object' } }, [vocab, chars], 'response_format').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenRouterError);
    expect((err as TokenRouterError).param).toBe('model');
    expect((err as Error).message).toMatch(/qwen3-tiny.*small.*different vocabularies/);
  });

  it('a grammar no token of the vocabulary can begin is refused naming the field, unless only checked', async () => {
    const chars = vocabularyFromTokenizerJson('small', charTokenizer().tokenizerJson, 64, [2]);
    const err = await checkConstraint({ grammar: { kind: 'json_object' } }, [chars], 'response_format').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenRouterError);
    expect((err as TokenRouterError).param).toBe('response_format');
    expect((err as Error).message).toMatch(/no token of model small's vocabulary can begin/);
    await expect(checkConstraint({ grammar: { kind: 'json_object' } }, [chars], 'tools.0.function.parameters', { enforced: false })).resolves.toBeUndefined();
    await expect(checkConstraint({ grammar: { kind: 'regex', pattern: '[0-9]+' } }, [chars], 'guided_regex')).resolves.toBeUndefined();
  });
});

describe('compile and cache', () => {
  it('compiles a schema cold, then answers from the cache', async () => {
    const schema = JSON.stringify({
      type: 'object',
      properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
      required: ['name', 'age'],
    });
    // the vocabulary's own setup (tokenizer info, compiler: once per vocabulary) is not the schema's
    const v0 = performance.now();
    await compileGrammar({ kind: 'json_object' }, vocab);
    const setup = performance.now() - v0;
    const t0 = performance.now();
    const a = await compileGrammar({ kind: 'json_schema', schema }, vocab);
    const cold = performance.now() - t0;
    const t1 = performance.now();
    const b = await compileGrammar({ kind: 'json_schema', schema }, vocab);
    const cached = performance.now() - t1;
    console.log(
      `compile at V=151936: vocabulary setup + json_object ${setup.toFixed(1)} ms; schema cold ${cold.toFixed(1)} ms, cached ${cached.toFixed(3)} ms`,
    );
    expect(b).toBe(a);
    expect(cached).toBeLessThan(cold);
  });

  it.each([
    [{ kind: 'json_schema', schema: '{"type": "objec' }, 'response_format.json_schema.schema', /JSON schema is not JSON/],
    [{ kind: 'json_schema', schema: '{"type": "frobnicate"}' }, 'guided_json', /JSON schema does not compile/],
    [{ kind: 'regex', pattern: '[a-' }, 'guided_regex', /regex does not compile/],
    [{ kind: 'ebnf', grammar: 'root ::= "a" | ' }, 'guided_grammar', /EBNF grammar does not compile: .*EBNF/],
  ] as const)('refuses %j with a 400 naming %s', async (grammar, param, why) => {
    const err = await checkConstraint({ grammar: grammar as GrammarSpec }, [vocab], param).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenRouterError);
    expect((err as TokenRouterError).code).toBe('invalid_request');
    expect((err as TokenRouterError).param).toBe(param);
    expect((err as Error).message).toMatch(why);
    expect((err as Error).message.startsWith(`${param}: `)).toBe(true);
  });

  it('refuses a malformed constraint naming the field', async () => {
    const err = await checkConstraint({ grammar: { kind: 'choice', choices: [] } } as never, [vocab], 'guided_choice').catch((e: unknown) => e);
    expect((err as TokenRouterError).param).toBe('guided_choice');
  });
});

describe('constraint state', () => {
  const prompt = [1, 2, 3];

  it('choice: literals with quotes and non-ASCII are matched exactly; a finished choice allows only stop tokens', async () => {
    const choices = ['say "hi"', 'ça va', 'a\\b'];
    for (const c of choices) {
      const s = await state({ kind: 'choice', choices }, prompt.length);
      const ids = tok.encode(c, false);
      s.sync([...prompt, ...ids]);
      const m = s.mask([...prompt, ...ids])!;
      for (const eos of vocab.stopTokenIds) expect(allowed(m, eos)).toBe(true);
      let others = 0;
      for (let id = 0; id < vocab.vocabSize; id++) if (allowed(m, id) && !vocab.stopTokenIds.includes(id)) others++;
      expect(others, c).toBe(0);
      s.dispose();
    }
  });

  it('refuses a committed token outside the grammar, naming its output index', async () => {
    const s = await state({ kind: 'regex', pattern: '[0-9]+' }, prompt.length);
    const digits = tok.encode('12', false);
    const letter = tok.encode('x', false);
    expect(() => s.sync([...prompt, ...digits, ...letter])).toThrow(GrammarViolation);
    expect(() => s.sync([...prompt, ...digits, ...letter])).toThrow(new RegExp(`output token ${digits.length} `));
  });

  it('a sequence that changes is rolled back in place, or replayed past the rollback window; masks match a fresh state', async () => {
    const spec: GrammarSpec = { kind: 'json_schema', schema: JSON.stringify({ type: 'object', properties: { k: { type: 'string' } }, required: ['k'] }) };
    const text = `{"k":"${'abc def '.repeat(60)}`;
    const ids = tok.encode(text, false);
    expect(ids.length).toBeGreaterThan(MAX_ROLLBACK_TOKENS + 4);
    const s = await state(spec, prompt.length);
    s.sync([...prompt, ...ids]);
    expect(s.acceptedCount).toBe(ids.length);
    // a discarded suffix of 3, then a different one
    const other = tok.encode('xyz', false);
    const seq = [...prompt, ...ids.slice(0, -3), ...other];
    const got = s.mask(seq)!;
    expect(s.rollbacks).toBe(1);
    const fresh = await state(spec, prompt.length);
    expect(Array.from(got)).toEqual(Array.from(fresh.mask(seq)!));
    // further back than the matcher keeps: restart and replay
    const short = [...prompt, ...ids.slice(0, 2)];
    expect(Array.from(s.mask(short)!)).toEqual(Array.from(fresh.mask(short)!));
    expect(s.replays).toBe(1);
    // and forward again
    expect(Array.from(s.mask(seq)!)).toEqual(Array.from((await state(spec, prompt.length)).mask(seq)!));
  });

  it('startAfter: free until the start id is committed, the grammar covers what follows', async () => {
    const END = 151_668; // any id: the test's own end-of-thought
    const s = await state({ kind: 'regex', pattern: '[0-9]+' }, prompt.length, [END]);
    const thought = tok.encode('let me think', false);
    expect(s.mask([...prompt, ...thought])).toBeUndefined();
    expect(s.maskedFrom).toBe(-1);
    const m = s.mask([...prompt, ...thought, END])!;
    expect(s.maskedFrom).toBe(thought.length + 1);
    expect(allowed(m, tok.encode('7', false)[0])).toBe(true);
    expect(allowed(m, tok.encode('x', false)[0])).toBe(false);
    // the end-of-thought discarded: free again
    expect(s.mask([...prompt, ...thought])).toBeUndefined();
  });

  it('mask cost per row at V=151,936 (reported)', async () => {
    const s = await state(
      { kind: 'json_schema', schema: JSON.stringify({ type: 'object', properties: { a: { type: 'array', items: { type: 'number' } } } }) },
      prompt.length,
    );
    const seq = [...prompt, ...tok.encode('{"a":[1.5,', false)];
    s.mask(seq);
    const n = 200;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) s.mask(seq);
    const ms = (performance.now() - t0) / n;
    console.log(`mask fill at V=151936: ${ms.toFixed(4)} ms/row`);
    expect(ms).toBeGreaterThan(0);
  });
});

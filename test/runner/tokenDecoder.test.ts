// The engine's decode-only tokenizer (no BPE merges) writes the same text as the full tokenizer, and gives grammars the same vocabulary.
import { beforeAll, describe, expect, it } from 'vitest';
import { engineVocabulary, folderVocabulary } from '../../runtime/grammar/modelVocabulary.ts';
import { detokFlush, detokPush, newDetokState } from '../../runtime/runner/detokenizer.ts';
import { loadModelFolder, type ModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TokenDecoder, withoutMerges } from '../../runtime/runner/tokenDecoder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';

const TEXTS = [
  'The quick brown fox jumps over the lazy dog.',
  '  leading spaces, tabs\tand\nnew lines\r\n',
  'café naïve façade Ærøskøbing — “quotes” … ½ °C',
  '中文分词测试：你好，世界！日本語のテキスト。한국어 문장.',
  'emoji 👋🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷 and math 𝔸𝕓 ∑ ∫',
  '<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|><|endoftext|>',
  'code: `const x = a?.b ?? [1, 2];` // ok\n\tif (x) { return "y"; }',
];

let folder: ModelFolder;
let full: TextTokenizer;
let dec: TokenDecoder;

beforeAll(() => {
  folder = loadModelFolder(realShapeFolder('qwen3-tiny').dir);
  full = TextTokenizer.fromFolder(folder);
  dec = TokenDecoder.fromFolder(folder);
});

describe('TokenDecoder', () => {
  it('holds no merges, and leaves the folder’s tokenizer.json as it was', () => {
    const merges = (folder.tokenizerJson.model as { merges: unknown[] }).merges;
    expect(merges.length).toBeGreaterThan(100_000);
    expect((dec.tokenizerJson.model as { merges: unknown[] }).merges).toEqual([]);
    expect((folder.tokenizerJson.model as { merges: unknown[] }).merges).toBe(merges);
    const wordPiece = { model: { type: 'WordPiece', vocab: { a: 0 } } };
    expect(withoutMerges(wordPiece)).toBe(wordPiece);
  });

  it('decodes real text as the full tokenizer does: multi-byte characters, special tokens kept or skipped', () => {
    for (const text of TEXTS) {
      const ids = full.encode(text, false);
      expect(ids.length).toBeGreaterThan(3);
      expect(dec.decode(ids)).toBe(full.decode(ids));
      expect(dec.decode(ids, false)).toBe(full.decode(ids, false));
      expect(dec.decode(ids, false)).toBe(text);
      // every prefix too: a window may end inside a multi-byte character
      for (let n = 1; n < ids.length; n++) expect(dec.decode(ids.slice(0, n), false)).toBe(full.decode(ids.slice(0, n), false));
    }
  });

  it('decodes every added token and a spread of single ids as the full tokenizer does', () => {
    const added = (folder.tokenizerJson.added_tokens as { id: number }[]).map((t) => t.id);
    expect(added.length).toBeGreaterThan(10);
    const ids = [...added, ...Array.from({ length: 3000 }, (_, i) => (i * 50_021) % 151_643)];
    for (const id of ids) {
      expect(dec.decode([id], false)).toBe(full.decode([id], false));
      expect(dec.decode([id])).toBe(full.decode([id]));
    }
  });

  it('streams the same text through the incremental detokenizer', () => {
    const ids = full.encode(TEXTS.join(' '), false);
    const run = (d: TokenDecoder | TextTokenizer) => {
      const s = newDetokState();
      return ids.map((t) => detokPush(d, s, t)).concat(detokFlush(d, s));
    };
    expect(run(dec)).toEqual(run(full));
  });

  it('decodes no ids as empty text, as an answer cut off before its first token has (the library refuses an empty array)', () => {
    expect(dec.decode([])).toBe('');
    expect(full.decode([])).toBe('');
  });

  it('gives grammars the folder’s vocabulary', () => {
    const info = { name: 'qwen3-tiny', vocabSize: folder.config.vocabSize, eosTokenIds: folder.config.eosTokenIds };
    const v = engineVocabulary(dec, info);
    expect(v?.key).toBe(folderVocabulary(folder).key);
    expect(v?.encoded).toEqual(folderVocabulary(folder).encoded);
  });
});

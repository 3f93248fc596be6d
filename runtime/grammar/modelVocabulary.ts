// The grammar vocabulary of a model: from its folder (the entry checks a constraint) or from the tokenizer beside its engine.
import type { ModelInfo } from '../../shared/protocol/runnerProtocol.ts';
import type { ModelFolder } from '../runner/modelFolder.ts';
import { TokenDecoder } from '../runner/tokenDecoder.ts';
import { TextTokenizer } from '../runner/tokenizer.ts';
import { vocabularyFromTokenizerJson, type GrammarVocabulary } from './vocabulary.ts';

/** Built once per tokenizer object and logits width: reading 150 k tokens and hashing them takes tens of ms. */
const memo = new WeakMap<object, Map<string, GrammarVocabulary>>();

function memoised(owner: object, key: string, make: () => GrammarVocabulary): GrammarVocabulary {
  let byKey = memo.get(owner);
  if (!byKey) memo.set(owner, (byKey = new Map()));
  let v = byKey.get(key);
  if (!v) byKey.set(key, (v = make()));
  return v;
}

/** A model folder's vocabulary: its tokenizer.json at config.json's vocab size, ending at its EOS ids. */
export function folderVocabulary(folder: Pick<ModelFolder, 'name' | 'tokenizerJson' | 'config'>): GrammarVocabulary {
  const { vocabSize, eosTokenIds } = folder.config;
  return memoised(folder.tokenizerJson, `${vocabSize}/${eosTokenIds.join(',')}`, () =>
    vocabularyFromTokenizerJson(folder.name, folder.tokenizerJson, vocabSize, eosTokenIds),
  );
}

/**
 * The vocabulary of the tokenizer beside an engine, at its runner's logits width and EOS ids;
 * undefined when the engine has none it can read tokens from (a simulated runner's decoder).
 */
export function engineVocabulary(decoder: unknown, info: Pick<ModelInfo, 'name' | 'vocabSize' | 'eosTokenIds'>): GrammarVocabulary | undefined {
  if (!(decoder instanceof TextTokenizer || decoder instanceof TokenDecoder)) return undefined;
  const json = decoder.tokenizerJson;
  return memoised(json, `${info.vocabSize}/${info.eosTokenIds.join(',')}`, () =>
    vocabularyFromTokenizerJson(info.name, json, info.vocabSize, info.eosTokenIds),
  );
}

// Token ids to text for an engine's detokenizer: a folder's tokenizer without the BPE merges, which only encoding reads.
import { Tokenizer } from '@huggingface/tokenizers';
import type { Decoder } from './detokenizer.ts';
import type { ModelFolder } from './modelFolder.ts';

/** How both TextTokenizer and TokenDecoder turn ids into text, so an engine's text is the entry's. */
export function decodeIds(tok: Tokenizer, ids: readonly number[], skipSpecialTokens: boolean): string {
  // The library throws on an empty array; an answer cut off before its first token (a prompt that fills the context) has none.
  if (ids.length === 0) return '';
  return tok.decode([...ids], { skip_special_tokens: skipSpecialTokens, clean_up_tokenization_spaces: false });
}

/**
 * tokenizer.json without its BPE merges (a real vocabulary's 150 k pairs, and the rank map the
 * library builds of them: about 40 MB of heap per engine thread): decoding maps ids to tokens and
 * runs the decoder chain, and never reads them. A model type without merges is kept as it is.
 */
export function withoutMerges(json: Record<string, unknown>): Record<string, unknown> {
  const model = json.model as Record<string, unknown> | undefined;
  if (!model || !Array.isArray(model.merges) || model.merges.length === 0) return json;
  return { ...json, model: { ...model, merges: [] } };
}

/** Decodes only; an engine thread builds it instead of a TextTokenizer (runnerSource.ts). */
export class TokenDecoder implements Decoder {
  private readonly tok: Tokenizer;
  /** tokenizer.json without merges (grammars read the vocabulary from it: runtime/grammar/modelVocabulary.ts). */
  readonly tokenizerJson: Record<string, unknown>;

  constructor(tokenizerJson: Record<string, unknown>, tokenizerConfig: Record<string, unknown>) {
    this.tokenizerJson = withoutMerges(tokenizerJson);
    this.tok = new Tokenizer(this.tokenizerJson, tokenizerConfig);
  }

  static fromFolder(folder: Pick<ModelFolder, 'tokenizerJson' | 'tokenizerConfig'>): TokenDecoder {
    return new TokenDecoder(folder.tokenizerJson, folder.tokenizerConfig);
  }

  decode(ids: readonly number[], skipSpecialTokens = true): string {
    return decodeIds(this.tok, ids, skipSpecialTokens);
  }
}

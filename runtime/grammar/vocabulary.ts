// A model's vocabulary as xgrammar reads it: the encoded token strings by id, how they encode bytes, and the ids that end an answer.
import { createHash } from 'node:crypto';
import { TokenRouterError } from '../errors.ts';

export type VocabType = 'byte_level' | 'byte_fallback' | 'raw';

export interface GrammarVocabulary {
  /** The model (folder) it was read from, for messages. */
  readonly name: string;
  /** Equal keys: the same tokens meaning the same text (a hash of type, prefix space and the encoded strings by id). */
  readonly key: string;
  /** The token strings by id as tokenizer.json writes them; ids past the tokenizer's (the logits' padding) are ''. */
  readonly encoded: readonly string[];
  readonly type: VocabType;
  /** SentencePiece-style tokenizers that prepend a space ("▁") to the text. */
  readonly prependSpace: boolean;
  /** The logits' width: masks have ceil(vocabSize / 32) words. */
  readonly vocabSize: number;
  /** The ids a finished grammar allows (the model's EOS ids). */
  readonly stopTokenIds: readonly number[];
}

type Json = Record<string, unknown>;

/**
 * A vocabulary from a model folder's tokenizer.json (as @huggingface/tokenizers reads it): BPE and
 * WordPiece vocab maps and Unigram piece lists, with the added tokens at their ids. `vocabSize` is
 * the model's logits width (config.json), which may exceed the tokenizer's ids.
 */
export function vocabularyFromTokenizerJson(name: string, json: Json, vocabSize: number, stopTokenIds: readonly number[]): GrammarVocabulary {
  const model = (json.model ?? {}) as Json;
  const encoded: string[] = new Array(vocabSize).fill('');
  const put = (id: number, text: string) => {
    if (!Number.isInteger(id) || id < 0)
      throw new TokenRouterError('invalid_request', `model "${name}": tokenizer.json has token ${JSON.stringify(text)} at id ${id}`, 'model');
    if (id >= vocabSize)
      throw new TokenRouterError(
        'invalid_request',
        `model "${name}": tokenizer.json has id ${id} (${JSON.stringify(text)}) but the model's logits are ${vocabSize} wide`,
        'model',
      );
    encoded[id] = text;
  };
  if (Array.isArray(model.vocab)) (model.vocab as [string, number][]).forEach(([piece], id) => put(id, piece));
  else if (model.vocab && typeof model.vocab === 'object') for (const [piece, id] of Object.entries(model.vocab as Record<string, number>)) put(id, piece);
  else throw new TokenRouterError('invalid_request', `model "${name}": tokenizer.json's model has no vocab`, 'model');
  for (const t of (json.added_tokens ?? []) as { id: number; content: string }[]) put(t.id, t.content);
  const type = vocabType(json);
  const prependSpace = type !== 'byte_level' && prependsSpace(json);
  const hash = createHash('sha256').update(`${type}|${prependSpace}|`);
  for (const t of encoded) hash.update(t).update('\u0000');
  return { name, key: hash.digest('hex').slice(0, 16), encoded, type, prependSpace, vocabSize, stopTokenIds: [...stopTokenIds] };
}

/** Names of every component of a (possibly Sequence) normalizer, pre-tokenizer or decoder. */
function parts(c: unknown): Json[] {
  if (!c || typeof c !== 'object') return [];
  const o = c as Json;
  const inner = (o.decoders ?? o.pretokenizers ?? o.normalizers) as unknown[] | undefined;
  return Array.isArray(inner) ? inner.flatMap(parts) : [o];
}

/** ByteLevel (GPT-2 style byte-to-unicode: Qwen, Llama 3), byte fallback (<0xNN> pieces: Llama 2, Mistral), or the text itself. */
function vocabType(json: Json): VocabType {
  const dec = parts(json.decoder);
  if (dec.some((d) => d.type === 'ByteLevel') || parts(json.pre_tokenizer).some((p) => p.type === 'ByteLevel')) return 'byte_level';
  if (dec.some((d) => d.type === 'ByteFallback') || (json.model as Json | undefined)?.byte_fallback === true) return 'byte_fallback';
  return 'raw';
}

function prependsSpace(json: Json): boolean {
  for (const p of [...parts(json.pre_tokenizer), ...parts(json.normalizer)]) {
    if (p.type === 'Metaspace' && (p.add_prefix_space === true || p.prepend_scheme === 'always' || p.prepend_scheme === 'first')) return true;
    if (p.type === 'Prepend' && p.prepend === '▁') return true;
  }
  return false;
}

/** A request's models must share one vocabulary (one grammar state serves every engine): else an error naming both. */
export function sameVocabulary(vocabularies: readonly GrammarVocabulary[], param = 'model'): void {
  const first = vocabularies[0];
  const other = vocabularies.find((v) => v.key !== first.key);
  if (first && other) {
    throw new TokenRouterError(
      'invalid_request',
      `models "${first.name}" and "${other.name}" have different vocabularies (${first.key} vs ${other.key}): one grammar cannot constrain a request that both write`,
      param,
    );
  }
}

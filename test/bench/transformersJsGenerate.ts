// Child process of the transformers-js suite: transformers.js' batched `generate` on one bundled model, timed, as its users run it.
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { AutoModelForCausalLM, Tensor, env } from '@huggingface/transformers';

/** What the parent sends on stdin: the prompts as token ids (the server's chat template, rendered by the parent). */
interface Job {
  warmup: number[][];
  prompts: number[][];
  batch: number;
  maxTokens: number;
  padTokenId: number;
}

const { values } = parseArgs({ options: { dir: { type: 'string' }, model: { type: 'string' }, threads: { type: 'string' } } });
if (!values.dir || !values.model) throw new Error('usage: transformersJsGenerate.ts --dir MODELS_DIR --model NAME < job.json');
const job = JSON.parse(readFileSync(0, 'utf8')) as Job;

env.allowRemoteModels = false;
env.localModelPath = path.resolve(values.dir) + path.sep;
// --threads N pins ONNX Runtime's intra-op pool (the served side's models[].intraOpNumThreads); absent: its own default.
const threads = values.threads === undefined ? undefined : Number(values.threads);
const model = await AutoModelForCausalLM.from_pretrained(values.model, {
  dtype: 'fp32',
  device: 'cpu',
  ...(threads ? { session_options: { intraOpNumThreads: threads, interOpNumThreads: 1 } } : {}),
});

/** Left-padded, as transformers.js pads a batch of prompts for a decoder-only model. */
function batchInputs(prompts: number[][]): { input_ids: Tensor; attention_mask: Tensor } {
  const width = Math.max(...prompts.map((p) => p.length));
  const ids = new BigInt64Array(prompts.length * width).fill(BigInt(job.padTokenId));
  const mask = new BigInt64Array(prompts.length * width);
  prompts.forEach((p, b) =>
    p.forEach((t, k) => {
      ids[b * width + width - p.length + k] = BigInt(t);
      mask[b * width + width - p.length + k] = 1n;
    }),
  );
  return { input_ids: new Tensor('int64', ids, [prompts.length, width]), attention_mask: new Tensor('int64', mask, [prompts.length, width]) };
}

/** Every batch of `job.batch` prompts generates exactly maxTokens new tokens a row (min = max: EOS suppressed, as ignore_eos does on the server). */
async function generateAll(prompts: number[][]): Promise<{ tokens: number; firstBatch: number[][] }> {
  let tokens = 0;
  let firstBatch: number[][] = [];
  for (let i = 0; i < prompts.length; i += job.batch) {
    const group = prompts.slice(i, i + job.batch);
    const out = (await model.generate({ ...batchInputs(group), max_new_tokens: job.maxTokens, min_new_tokens: job.maxTokens, do_sample: false })) as Tensor;
    const width = Math.max(...group.map((p) => p.length));
    tokens += group.length * (out.dims[1] - width);
    if (i === 0) firstBatch = (out.tolist() as bigint[][]).map((row) => row.slice(width).map(Number));
  }
  return { tokens, firstBatch };
}

await generateAll(job.warmup);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const { tokens: outputTokens, firstBatch } = await generateAll(job.prompts);
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  `${JSON.stringify({ output_tokens: outputTokens, wall_ms: wallMs, cpu_ms: (cpu.user + cpu.system) / 1000, first_batch_tokens: firstBatch })}\n`,
);
await model.dispose();

// Export variants: dtype picks the file, external data loads in place (and inline weights are moved there once), EOS id lists, undrivable exports and an absent CUDA refused by name.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as ort from 'onnxruntime-node';
import protobuf from 'protobufjs/minimal.js';
import { afterAll, describe, expect, it } from 'vitest';
import { describeStatus, modelsCommand } from '../../runtime/cli/modelsCommand.ts';
import { ModelFolderError, loadModelFolder, modelFolderStatus } from '../../runtime/runner/modelFolder.ts';
import { graphOps, refuseUndrivable } from '../../runtime/runner/onnxExport.ts';
import { convertToExternalData, readGraphFile } from '../../runtime/runner/onnxGraphFile.ts';
import { OnnxRunner, kvNames } from '../../runtime/runner/onnxRunner.ts';
import { soloGenerate } from './helpers.ts';
import { tinyGolden, tinyModelDir } from '../support/tinyFamily.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-variants-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

let copies = 0;
function copy(edit: (dir: string) => void = () => {}): string {
  const dir = path.join(tmp, `small-${copies++}`);
  fs.cpSync(tinyModelDir('small'), dir, { recursive: true });
  edit(dir);
  return dir;
}
const editJson = (file: string, f: (j: Record<string, unknown>) => void) => {
  const j = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  f(j);
  fs.writeFileSync(file, JSON.stringify(j));
};
const golden = tinyGolden('small').rows[0];

describe('EOS ids', () => {
  it('are the union of config.json and generation_config.json, ints or lists, each once', () => {
    const dir = copy((d) => {
      editJson(path.join(d, 'config.json'), (j) => (j.eos_token_id = [2, 5]));
      editJson(path.join(d, 'generation_config.json'), (j) => (j.eos_token_id = [5, 9, 2]));
    });
    expect(loadModelFolder(dir).config.eosTokenIds).toEqual([2, 5, 9]);
    const one = copy((d) => editJson(path.join(d, 'generation_config.json'), (j) => (j.eos_token_id = 7)));
    expect(loadModelFolder(one).config.eosTokenIds).toEqual([2, 7]);
  });

  it('a bad EOS id is an error naming the file and key', () => {
    const cases: [(d: string) => void, RegExp][] = [
      [(d) => editJson(path.join(d, 'generation_config.json'), (j) => (j.eos_token_id = [2, 'x'])), /generation_config\.json key "eos_token_id"/],
      [(d) => editJson(path.join(d, 'config.json'), (j) => (j.eos_token_id = [])), /config\.json key "eos_token_id"/],
      [(d) => editJson(path.join(d, 'generation_config.json'), (j) => (j.eos_token_id = [2, 30])), /"eos_token_id": 30 is outside the vocabulary/],
      [(d) => editJson(path.join(d, 'generation_config.json'), (j) => (j.top_k = 'many')), /generation_config\.json key "top_k"/],
    ];
    for (const [edit, msg] of cases) {
      const dir = copy(edit);
      expect(() => loadModelFolder(dir)).toThrow(ModelFolderError);
      expect(() => loadModelFolder(dir)).toThrow(msg);
    }
  });
});

describe('dtype', () => {
  it('picks the file transformers.js would; a missing one names the files present', async () => {
    const dir = copy((d) => fs.renameSync(path.join(d, 'onnx', 'model.onnx'), path.join(d, 'onnx', 'model_quantized.onnx')));
    expect(path.basename(loadModelFolder(dir, { dtype: 'q8' }).onnxPath)).toBe('model_quantized.onnx');
    expect(() => loadModelFolder(dir)).toThrow(/onnx\/model\.onnx: file is missing \(dtype fp32; onnx\/ holds: model_quantized\.onnx\)/);
    expect(() => loadModelFolder(dir, { dtype: 'q4' })).toThrow(/onnx\/model_q4\.onnx: file is missing/);
    const runner = await OnnxRunner.load(dir, { dtype: 'q8' });
    expect(await soloGenerate(runner, 1, golden.input_ids, 64)).toEqual(golden.output_ids);
  });
});

describe('external data', () => {
  it('an export with model.onnx_data loads in place: its .onnx is small, the answer unchanged, KV outputs rewritten', async () => {
    const dir = copy((d) => {
      const onnx = path.join(d, 'onnx', 'model.onnx');
      const graph = convertToExternalData(onnx, path.join(d, 'onnx', 'model.onnx_data'));
      fs.writeFileSync(onnx, graph);
    });
    const f = loadModelFolder(dir);
    expect(f.externalData.map((x) => path.basename(x))).toEqual(['model.onnx_data']);
    expect(fs.statSync(f.onnxPath).size).toBeLessThan(fs.statSync(f.externalData[0]).size / 5);
    expect(readGraphFile(f.onnxPath, f.externalData).how).toBe('whole');
    const runner = await OnnxRunner.load(dir);
    expect(runner.kvOutputs).toBe('new');
    expect(await soloGenerate(runner, 1, golden.input_ids, 64)).toEqual(golden.output_ids);
    expect(modelFolderStatus(dir).externalData).toEqual(['onnx/model.onnx_data']);
  });

  it('an inline export up to the limit is read in place: its graph refers to the weights in the file itself, the answer unchanged', async () => {
    const onnx = loadModelFolder(tinyModelDir('small')).onnxPath;
    const graph = readGraphFile(onnx, []);
    expect(graph.how).toBe('in-place');
    expect(graph.dataDir).toBe(path.dirname(onnx));
    expect(graph.model.length).toBeLessThan(fs.statSync(onnx).size / 5);
    // each moved tensor names the model file, at the offset its bytes had there
    expect(Buffer.from(graph.model).includes('model.onnx')).toBe(true);
    const runner = await OnnxRunner.load(tinyModelDir('small'));
    expect(await soloGenerate(runner, 1, golden.input_ids, 64)).toEqual(golden.output_ids);
  });

  it('an inline export above the limit is converted once into the cache folder and read from there after', async () => {
    const cacheDir = path.join(tmp, 'cache');
    const opts = { inlineLimitBytes: 0, cacheDir };
    const onnx = loadModelFolder(tinyModelDir('small')).onnxPath;
    expect(readGraphFile(onnx, [], opts).how).toBe('converted');
    const again = readGraphFile(onnx, [], opts);
    expect(again.how).toBe('cached');
    expect(again.model.length).toBeLessThan(fs.statSync(onnx).size / 5);
    const runner = await OnnxRunner.load(tinyModelDir('small'), { graphFile: opts });
    expect(await soloGenerate(runner, 1, golden.input_ids, 64)).toEqual(golden.output_ids);
  });
});

/** A ModelProto with one node of `op` in `domain`, enough for graphOps. */
function modelWithOp(op: string, domain: string): Uint8Array {
  const w = protobuf.Writer.create();
  w.uint32((7 << 3) | 2).fork(); // graph
  w.uint32((1 << 3) | 2).fork(); // node
  w.uint32((4 << 3) | 2).string(op);
  if (domain) w.uint32((7 << 3) | 2).string(domain);
  w.ldelim().ldelim();
  return w.finish();
}

describe('exports this runner cannot drive', () => {
  const past = kvNames(2).past;
  const session = (inputNames: string[], kvType = 'float32') =>
    ({
      inputNames,
      inputMetadata: inputNames.map((name) => ({ name, isTensor: true, type: name.startsWith('past') ? kvType : 'int64', shape: [] })),
    }) as unknown as ort.InferenceSession;
  const optimum = ['input_ids', 'attention_mask', 'position_ids', ...past];

  it('are refused naming what they lack', () => {
    expect(graphOps(modelWithOp('GroupQueryAttention', 'com.microsoft'))).toEqual(new Set(['com.microsoft.GroupQueryAttention']));
    expect(() =>
      refuseUndrivable('m.onnx', modelWithOp('GroupQueryAttention', 'com.microsoft'), session([...optimum, 'seqlens_k', 'total_sequence_length']), past),
    ).toThrow(/GroupQueryAttention \(ONNX Runtime GenAI's layout/);
    const plain = modelWithOp('MatMul', '');
    expect(() => refuseUndrivable('m.onnx', plain, session(['input_ids', 'attention_mask']), past)).toThrow(/no past_key_values\.\* inputs/);
    expect(() => refuseUndrivable('m.onnx', plain, session(['input_ids', 'attention_mask', ...past.slice(0, 2)]), past)).toThrow(
      /past_key_values\.1\.key, past_key_values\.1\.value are missing/,
    );
    expect(() => refuseUndrivable('m.onnx', plain, session([...optimum, 'token_type_ids']), past)).toThrow(/does not feed: token_type_ids/);
    expect(() => refuseUndrivable('m.onnx', plain, session(optimum, 'float16'), past)).toThrow(/KV cache \(past_key_values\.0\.key\) is float16/);
    expect(() => refuseUndrivable('m.onnx', plain, session(optimum), past)).not.toThrow();
  });

  it('executionProvider cuda without the CUDA libraries fails at load naming what is missing', async () => {
    await expect(OnnxRunner.load(tinyModelDir('small'), { executionProvider: 'cuda' })).rejects.toThrow(
      /executionProvider "cuda" cannot start: .*libonnxruntime_providers_\w+\.so.* missing from /,
    );
  });
});

describe('tokenrouter models', () => {
  it('prints the file, dtype, vocabulary and EOS ids each configured model will use', async () => {
    const dir = copy((d) => {
      fs.renameSync(path.join(d, 'onnx', 'model.onnx'), path.join(d, 'onnx', 'model_q4.onnx'));
      editJson(path.join(d, 'generation_config.json'), (j) => (j.eos_token_id = [2, 3]));
    });
    expect(describeStatus(modelFolderStatus(dir, { dtype: 'q4' }, 'mine'))).toMatch(
      /^ok {3}mine {7}onnx\/model_q4\.onnx \(dtype q4, [0-9.]+ MiB\) {2}vocab 30 {2}eos 2, 3 /,
    );
    const config = path.join(tmp, 'server.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        models: [
          { name: 'mine', path: dir, dtype: 'q4' },
          { name: 'bad', path: dir },
        ],
      }),
    );
    const lines: string[] = [];
    const log = console.log;
    console.log = (s: string) => void lines.push(s);
    try {
      expect(await modelsCommand(['--config', config])).toBe(1);
    } finally {
      console.log = log;
    }
    expect(lines[0]).toMatch(/^ok {3}mine .*model_q4\.onnx \(dtype q4/);
    expect(lines[1]).toMatch(/^BAD {2}bad .*onnx\/model\.onnx: file is missing \(dtype fp32; onnx\/ holds: model_q4\.onnx\)/);
  });
});

// Malformed model folders fail with a typed error that names the file and key; listing reports status.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelFolderError, listModelFolders, loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TINY_MODEL_NAMES, tinyModelDir } from '../support/tinyFamily.ts';

let root: string;
const copy = (name: string): string => {
  const dst = path.join(root, name);
  fs.cpSync(tinyModelDir('small'), dst, { recursive: true });
  return dst;
};
const editJson = (file: string, f: (j: Record<string, unknown>) => void): void => {
  const j = JSON.parse(fs.readFileSync(file, 'utf8'));
  f(j);
  fs.writeFileSync(file, JSON.stringify(j));
};
function errorOf(fn: () => unknown): ModelFolderError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelFolderError);
    return e as ModelFolderError;
  }
  throw new Error('expected a ModelFolderError');
}

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-folders-'));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('loadModelFolder', () => {
  it('accepts every bundled model', () => {
    for (const m of TINY_MODEL_NAMES) {
      const f = loadModelFolder(tinyModelDir(m));
      expect(f.config.numLayers).toBeGreaterThan(0);
      expect(f.kvBytesPerToken).toBe(2 * f.config.numLayers * f.config.numKvHeads * f.config.headDim * 4);
    }
    expect(Object.keys(loadModelFolder(tinyModelDir('small')).routers).sort()).toEqual(['citer', 'citer-tf', 'colm', 'colm-tf', 'r2r', 'r2r-tf']);
  });

  it('names a missing config.json', () => {
    const d = copy('no-config');
    fs.rmSync(path.join(d, 'config.json'));
    const e = errorOf(() => loadModelFolder(d));
    expect(e.file).toBe('config.json');
    expect(e.message).toMatch(/config\.json: file is missing/);
  });

  it('names a missing or malformed key', () => {
    const d = copy('bad-key');
    editJson(path.join(d, 'config.json'), (j) => delete j.num_hidden_layers);
    expect(errorOf(() => loadModelFolder(d)).key).toBe('num_hidden_layers');
    editJson(path.join(d, 'config.json'), (j) => {
      j.num_hidden_layers = 2;
      j.vocab_size = 'thirty';
    });
    const e = errorOf(() => loadModelFolder(d));
    expect(e.key).toBe('vocab_size');
    expect(e.message).toMatch(/non-negative integer/);
  });

  it('names invalid JSON, a missing ONNX file and a missing router file', () => {
    const d = copy('broken');
    fs.writeFileSync(path.join(d, 'tokenizer.json'), '{ not json');
    expect(errorOf(() => loadModelFolder(d)).file).toBe('tokenizer.json');
    fs.cpSync(path.join(tinyModelDir('small'), 'tokenizer.json'), path.join(d, 'tokenizer.json'));
    fs.rmSync(path.join(d, 'routers', 'r2r.onnx'));
    expect(errorOf(() => loadModelFolder(d)).key).toBe('heads.r2r.file');
    fs.rmSync(path.join(d, 'onnx', 'model.onnx'));
    expect(errorOf(() => loadModelFolder(d)).file).toBe('onnx/model.onnx');
  });

  it('OnnxRunner.load surfaces the same typed error', async () => {
    const d = copy('runner-load');
    fs.rmSync(path.join(d, 'tokenizer.json'));
    await expect(OnnxRunner.load(d)).rejects.toBeInstanceOf(ModelFolderError);
  });

  it('listModelFolders reports each folder with its status', () => {
    const d = copy('zz-listed-bad');
    fs.rmSync(path.join(d, 'onnx', 'model.onnx'));
    const all = listModelFolders(root);
    const bad = all.find((s) => s.name === 'zz-listed-bad')!;
    expect(bad.ok).toBe(false);
    expect(bad.error).toMatch(/onnx\/model\.onnx/);
    const bundled = listModelFolders(path.dirname(tinyModelDir('small')));
    for (const m of TINY_MODEL_NAMES) expect(bundled.find((s) => s.name === m)?.ok).toBe(true);
  });
});

// Missing and malformed config files and model folders: each refused with an error naming the file and the key at fault.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServerConfig } from '../../runtime/config/serverConfig.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { ModelFolderError, listModelFolders, loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-cfg-'));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

describe('config files', () => {
  const write = (name: string, text: string) => {
    const p = path.join(root, name);
    fs.writeFileSync(p, text);
    return p;
  };

  it.each([
    ['a missing file', () => path.join(root, 'nope.json'), /cannot read config .*nope\.json.*ENOENT/, 'config'],
    ['a directory', () => root, /cannot read config .*EISDIR/, 'config'],
    ['an empty file', () => write('empty.json', ''), /empty\.json is not valid JSON/, 'config'],
    ['bad JSON', () => write('bad.json', '{"port": 80,,}'), /bad\.json is not valid JSON/, 'config'],
    ['a JSON array', () => write('arr.json', '[1]'), /\(root\): .*expected object/, ''],
    ['an unknown key', () => write('typo.json', '{"prot": 8080}'), /\(root\): Unrecognized key.*"prot"/, ''],
    ['an unknown nested key', () => write('nested.json', '{"limits": {"maxQeue": 3}}'), /limits: Unrecognized key.*"maxQeue"/, 'limits'],
    ['a port of the wrong type', () => write('port.json', '{"port": "80"}'), /port: .*expected number/, 'port'],
    ['a port out of range', () => write('port2.json', '{"port": 70000}'), /port: .*<=65535/, 'port'],
    ['a negative queue', () => write('queue.json', '{"limits": {"maxQueue": -1}}'), /limits\.maxQueue: /, 'limits.maxQueue'],
    ['a tiny body limit', () => write('body.json', '{"limits": {"maxBodyBytes": 10}}'), /limits\.maxBodyBytes: /, 'limits.maxBodyBytes'],
    ['an unknown scheduling mode', () => write('mode.json', '{"scheduling": {"mode": "fastest"}}'), /scheduling\.mode: /, 'scheduling.mode'],
    ['no models', () => write('nomodels.json', '{"models": []}'), /models: /, 'models'],
    ['a model name with a slash', () => write('mname.json', '{"models": [{"name": "../x"}]}'), /models\.0\.name: letters, digits/, 'models.0.name'],
    ['a model listed twice', () => write('dup.json', '{"models": [{"name": "a"}, {"name": "a"}]}'), /"a" is listed twice/, 'models'],
    [
      'a threshold for an unknown model',
      () => write('thr.json', '{"models": [{"name": "a"}], "scheduling": {"thresholds": {"b": 2}}}'),
      /scheduling\.thresholds\.b: no model named "b"/,
      'scheduling.thresholds.b',
    ],
    ['an admin token too short to be safe', () => write('tok.json', '{"adminToken": "abc"}'), /adminToken: /, 'adminToken'],
    [
      'a remote model with a key of the removed per-step runner',
      () => write('pipe.json', '{"models": [{"name": "large", "remote": {"nats": "nats://10.0.0.5:4222", "pipelineDepth": 2}}]}'),
      /models\.0\.remote\.pipelineDepth: remote\.pipelineDepth was removed: steps no longer cross the network/,
      'models.0.remote.pipelineDepth',
    ],
    [
      'the removed scheduling.lookahead',
      () => write('look.json', '{"scheduling": {"lookahead": 8}}'),
      /scheduling\.lookahead: scheduling\.lookahead was removed: routing runs beside the model, so there is no round trip to hide/,
      'scheduling.lookahead',
    ],
    [
      'an unknown replica-loss policy',
      () => write('recompute.json', '{"models": [{"name": "large", "remote": {"nats": "nats://10.0.0.5:4222", "onReplicaLoss": "retry"}}]}'),
      /models\.0\.remote\.onReplicaLoss: .*"fail"\|"recompute"/,
      'models.0.remote.onReplicaLoss',
    ],
  ])('refuses %s with the key named', (_what, file, message, param) => {
    const e = thrown(() => loadServerConfig(file()));
    expect(e).toBeInstanceOf(TokenRouterError);
    expect(e.message).toMatch(message);
    expect((e as TokenRouterError).param).toBe(param);
  });

  it('every problem is listed, one per line, not just the first', () => {
    const e = thrown(() => loadServerConfig(write('many.json', '{"port": "x", "dev": 3, "limits": {"maxTokens": 0}}')));
    expect(e.message.split('\n').filter((l) => /^\s+\S+: /.test(l)).length).toBe(3);
    expect(e.message).toMatch(/port: /);
    expect(e.message).toMatch(/dev: /);
    expect(e.message).toMatch(/limits\.maxTokens: /);
  });

  it('a valid file loads, relative paths resolved against the file', () => {
    const sub = path.join(root, 'sub');
    fs.mkdirSync(sub, { recursive: true });
    const cfg = loadServerConfig(path.join(sub, path.basename(write('sub/ok.json', '{"dataDir": "d", "modelsDir": "../m"}'))));
    expect(cfg.dataDir).toBe(path.join(sub, 'd'));
    expect(cfg.modelsDir).toBe(path.join(root, 'm'));
  });
});

describe('model folders', () => {
  const CONFIG = {
    model_type: 'llama',
    hidden_size: 64,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    num_hidden_layers: 2,
    vocab_size: 30,
    max_position_embeddings: 256,
    bos_token_id: 1,
    eos_token_id: 2,
  };
  /** A folder that loads: config, tokenizer and a (fake, never run) ONNX file. */
  function folder(name: string, edit: (dir: string) => void = () => {}): string {
    const dir = path.join(root, 'models', name);
    fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(CONFIG));
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify({ model: { type: 'BPE', vocab: {}, merges: [] } }));
    fs.writeFileSync(path.join(dir, 'onnx', 'model.onnx'), Buffer.alloc(64, 1));
    edit(dir);
    return dir;
  }
  const editJson = (file: string, f: (j: Record<string, unknown>) => void) => {
    const j = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    f(j);
    fs.writeFileSync(file, JSON.stringify(j));
  };
  const routers = (dir: string, json: unknown, files: string[] = []) => {
    fs.mkdirSync(path.join(dir, 'routers'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'routers', 'routers.json'), JSON.stringify(json));
    for (const f of files) fs.writeFileSync(path.join(dir, 'routers', f), 'x');
  };

  it('the fixture folder itself loads', () => {
    const f = loadModelFolder(folder('good'));
    expect(f.config.vocabSize).toBe(30);
    expect(f.kvBytesPerToken).toBe(2 * 2 * 2 * 16 * 4);
  });

  it.each<[string, (dir: string) => void, string, string | undefined, RegExp]>([
    ['the folder is missing', (d) => fs.rmSync(d, { recursive: true }), '.', undefined, /not a directory/],
    ['config.json is missing', (d) => fs.rmSync(path.join(d, 'config.json')), 'config.json', undefined, /file is missing/],
    ['config.json is not JSON', (d) => fs.writeFileSync(path.join(d, 'config.json'), '{hidden_size: 64'), 'config.json', undefined, /not valid JSON/],
    ['config.json is an array', (d) => fs.writeFileSync(path.join(d, 'config.json'), '[]'), 'config.json', undefined, /expected a JSON object/],
    ['hidden_size is missing', (d) => editJson(path.join(d, 'config.json'), (j) => delete j.hidden_size), 'config.json', 'hidden_size', /missing/],
    ['vocab_size is a string', (d) => editJson(path.join(d, 'config.json'), (j) => (j.vocab_size = '30')), 'config.json', 'vocab_size', /non-negative integer/],
    [
      'num_hidden_layers is negative',
      (d) => editJson(path.join(d, 'config.json'), (j) => (j.num_hidden_layers = -2)),
      'config.json',
      'num_hidden_layers',
      /non-negative integer/,
    ],
    [
      'num_attention_heads is 0',
      (d) => editJson(path.join(d, 'config.json'), (j) => (j.num_attention_heads = 0)),
      'config.json',
      'num_attention_heads',
      /positive/,
    ],
    [
      'kv heads do not divide heads',
      (d) => editJson(path.join(d, 'config.json'), (j) => (j.num_key_value_heads = 3)),
      'config.json',
      'num_key_value_heads',
      /divide/,
    ],
    ['tokenizer.json is missing', (d) => fs.rmSync(path.join(d, 'tokenizer.json')), 'tokenizer.json', undefined, /file is missing/],
    ['tokenizer.json has no model', (d) => fs.writeFileSync(path.join(d, 'tokenizer.json'), '{}'), 'tokenizer.json', 'model', /missing/],
    ['the ONNX file is missing', (d) => fs.rmSync(path.join(d, 'onnx'), { recursive: true }), 'onnx/model.onnx', undefined, /file is missing/],
    ['the ONNX file is truncated', (d) => fs.writeFileSync(path.join(d, 'onnx', 'model.onnx'), 'x'), 'onnx/model.onnx', undefined, /truncated/],
    ['routers.json has no heads', (d) => routers(d, { topk: 4 }), 'routers/routers.json', 'heads', /missing/],
    [
      'a router file is missing',
      (d) => routers(d, { heads: { citer: { file: 'citer.onnx', inputs: { h: { source: 'hidden' } } } } }),
      'routers/routers.json',
      'heads.citer.file',
      /missing/,
    ],
    [
      'a router input has an unknown source',
      (d) => routers(d, { heads: { citer: { file: 'c.onnx', inputs: { h: { source: 'vibes' } } } } }, ['c.onnx']),
      'routers/routers.json',
      'heads.citer.inputs.h.source',
      /unknown source/,
    ],
    [
      'a router has no inputs',
      (d) => routers(d, { heads: { citer: { file: 'c.onnx', inputs: {} } } }, ['c.onnx']),
      'routers/routers.json',
      'heads.citer.inputs',
      /no inputs/,
    ],
  ])('refuses a folder where %s, naming the file and key', (what, edit, file, key, problem) => {
    const dir = folder(what.replace(/\W+/g, '-'), edit);
    const e = thrown(() => loadModelFolder(dir));
    expect(e).toBeInstanceOf(ModelFolderError);
    const fe = e as ModelFolderError;
    expect(fe.file).toBe(file);
    expect(fe.key).toBe(key);
    expect(fe.problem).toMatch(problem);
    expect(fe.message).toContain(file);
  });

  it('listing reports each broken folder with its error and keeps the good ones', () => {
    const list = listModelFolders(path.join(root, 'models'));
    const good = list.find((m) => m.name === 'good')!;
    expect(good.ok).toBe(true);
    const broken = list.filter((m) => !m.ok);
    expect(broken.length).toBeGreaterThanOrEqual(10);
    for (const b of broken) expect(b.error).toMatch(/^model folder /);
  });

  it('the server refuses to start on a broken model folder, with that error, before starting any worker', async () => {
    const dir = folder('startup', (d) => editJson(path.join(d, 'config.json'), (j) => delete j.eos_token_id));
    const config = loadServerConfig(
      (() => {
        const p = path.join(root, 'start.json');
        fs.writeFileSync(p, JSON.stringify({ dataDir: path.join(root, 'data'), modelsDir: path.dirname(dir), models: [{ name: 'startup' }] }));
        return p;
      })(),
    );
    await expect(TokenRouterService.start(config)).rejects.toThrow(/startup: config\.json key "eos_token_id": missing/);
  });
});

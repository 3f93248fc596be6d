// The CLIs as a user runs them (spawned processes): a wrong flag, a busy port or a missing model folder is one line and a non-zero exit, never a stack; progress piped to a file is whole lines.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { TINY_FAMILY_DIR, tinyModelDir } from '../support/tinyFamily.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'runtime/cli/tokenrouter.mjs');
const LOADGEN = path.join(ROOT, 'runtime/loadgen/cli.ts');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-cli-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (or kills it once `until` matches its stdout) from a folder outside the project. */
function run(argv: string[], opts: { env?: Record<string, string>; until?: RegExp; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: tmp, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out: ${argv.join(' ')}\n${stdout}\n${stderr}`));
    }, opts.timeoutMs ?? 30_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (opts.until?.test(stdout)) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const cli = (args: string[], opts?: Parameters<typeof run>[1]) => run([BIN, ...args], opts);
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm')).href;
const loadgen = (args: string[]) => run(['--import', TSX, LOADGEN, ...args]);

/** Exit code non-zero, stderr exactly one line matching `re`, and no stack frame anywhere. */
function oneLineError(r: Run, re: RegExp): void {
  const lines = r.stderr.trim().split('\n');
  expect(r.code, r.stderr).not.toBe(0);
  expect(r.code).not.toBeNull();
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(re);
  expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/^\s+at /m);
}

function write(name: string, json: unknown): string {
  const file = path.join(tmp, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(json));
  return file;
}

describe('tokenrouter serve', () => {
  it('a busy port: one line naming the port, --port and PORT=, before any model loads', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const [flag, env] = await Promise.all([cli(['serve', '--port', String(port)]), cli(['serve'], { env: { PORT: String(port) } })]);
      for (const r of [flag, env]) {
        oneLineError(r, new RegExp(`^error: port ${port} on 127\\.0\\.0\\.1 is already in use: .*--port N.*PORT=N`));
        expect(r.stdout).not.toMatch(/loading/);
      }
    } finally {
      blocker.close();
    }
  });

  it('a config setting only dataDir finds the bundled models: defaults resolve against the project, not the file', async () => {
    const file = write('only-data/config.json', { dataDir: 'data' });
    const r = await cli(['serve', '--config', file, '--port', '0'], { until: /loading \d+ models …\n(.*\n){3}/, timeoutMs: 60_000 });
    expect(r.stderr).not.toMatch(/ModelFolderError|^\s+at /m);
    expect(r.stdout).toContain(`dataDir ${path.join(tmp, 'only-data/data')} `);
    for (const m of ['small', 'medium', 'large']) expect(r.stdout).toMatch(new RegExp(`^  ${m} +${path.join(ROOT, 'examples/models', m)}$`, 'm'));
  });

  it('the start-up log names each configured model folder, not modelsDir', async () => {
    const file = write('own-paths/config.json', {
      models: [
        { name: 'mine', path: tinyModelDir('small') },
        { name: 'big', path: tinyModelDir('large') },
      ],
    });
    const r = await cli(['serve', '--config', file, '--port', '0'], { until: /loading 2 models …\n(.*\n){2}/, timeoutMs: 60_000 });
    expect(r.stdout).toMatch(new RegExp(`^  mine +${tinyModelDir('small')}$`, 'm'));
    expect(r.stdout).toMatch(new RegExp(`^  big +${tinyModelDir('large')}$`, 'm'));
    expect(r.stdout).not.toContain(tinyModelDir('mine'));
    expect(r.stdout).toContain(`dataDir ${path.join(ROOT, '.tokenrouter')} `);
  });

  it('a missing model folder is one line naming the key', async () => {
    const dirFile = write('bad-dir/config.json', { dataDir: 'data', modelsDir: 'nowhere' });
    const pathFile = write('bad-path/config.json', { models: [{ name: 'small', path: 'missing' }] });
    const [dir, p] = await Promise.all([cli(['serve', '--config', dirFile, '--port', '0']), cli(['serve', '--config', pathFile, '--port', '0'])]);
    oneLineError(dir, new RegExp(`^error: modelsDir: no model folder for "small" at ${path.join(tmp, 'bad-dir/nowhere/small')}; set "modelsDir" in `));
    oneLineError(
      p,
      new RegExp(`^error: models\\[0\\]\\.path: no model folder for "small" at ${path.join(tmp, 'bad-path/missing')}; set "models\\[0\\]\\.path"`),
    );
  });
});

describe('tokenrouter serve under a budget its models cannot fit', () => {
  it('says what took the memory in one line and exits (the loaded models do not keep it alive)', async () => {
    const file = write('tight/config.json', {
      dataDir: 'data',
      modelsDir: TINY_FAMILY_DIR,
      models: [{ name: 'small' }],
      memory: { budgetMiB: 100 },
    });
    const r = await cli(['serve', '--config', file, '--port', '0'], { timeoutMs: 60_000 });
    oneLineError(r, /^error: memory\.budgetMiB is too small: .*weights as loaded take [0-9.]+ MiB.*at least \d+ MiB are needed$/);
  }, 90_000);
});

describe('flags', () => {
  it('bad values: one line naming the flag and what it takes', async () => {
    const cases: [string[], RegExp][] = [
      [['simulate', '--requests', '-3'], /^error: --requests must be an integer from 1 to .*, got "-3"$/],
      [['simulate', '--p', '2'], /^error: --p must be a number from 0 to 1, got "2"$/],
      [['simulate', '--retain', 'maybe'], /^error: --retain must be true or false, got "maybe"$/],
      [['simulate', '--requests'], /^error: --requests needs a value$/],
      [['serve', '--port', '70000'], /^error: port must be an integer 0–65535, got "70000"$/],
      [['eval', '--max-tokens', 'lots'], /^error: --max-tokens must be an integer from 1 to .*, got "lots"$/],
      [['optimize', '--trace', 'x.jsonl', '--concurrency', '0'], /^error: cannot read --trace x\.jsonl|^error: --concurrency must be/],
      // --lookahead is no flag of serve: refused like any unknown one
      [['bench', 'scale', '--lookahead', '8'], /^error: unknown flag --lookahead/],
      // bench serve is the load generator, with its own flags and messages under the CLI's error prefix
      [
        ['bench', 'serve', '--url', 'http://127.0.0.1:9', '--model', 'r2r', '--concurrency', '0'],
        /^error: --concurrency must be an integer from 1 to .*, got "0"$/,
      ],
    ];
    const runs = await Promise.all(cases.map(([args]) => cli(args)));
    runs.forEach((r, i) => oneLineError(r, cases[i][1]));
    oneLineError(
      await loadgen(['--url', 'http://127.0.0.1:9', '--model', 'r2r', '--concurrency', '0']),
      /^--concurrency must be an integer from 1 to .*, got "0"$/,
    );
  });

  it('an unknown flag is an error naming it, in every CLI (tokenrouter, bench, load generator)', async () => {
    const [sim, serve, models, bench] = await Promise.all([
      cli(['simulate', '--request', '3']),
      cli(['serve', '--prot', '9000']),
      cli(['models', '--folder', 'x']),
      cli(['bench', 'scale', '--concurrencies', '4']),
    ]);
    oneLineError(sim, /^error: unknown flag --request; known flags: .*--requests/);
    oneLineError(serve, /^error: unknown flag --prot; known flags: --config, --port, --host, --api-key$/);
    oneLineError(models, /^error: unknown flag --folder; known flags: --dir, --config$/);
    oneLineError(bench, /^error: unknown flag --concurrencies; known flags: .*--concurrency/);
    oneLineError(await loadgen(['--url', 'http://127.0.0.1:9', '--model', 'r2r', '--nope', '1']), /^unknown flag --nope; known flags: --url, --model/);
  });

  it('bench --help lists every suite on its own line with a rough duration', async () => {
    const r = await cli(['bench', '--help']);
    expect(r.code).toBe(0);
    for (const suite of [
      'sim-modes',
      'overhead',
      'models',
      'ir-overhead',
      'dtmc-validate',
      'dtmc-solve',
      'dtmc-onnx',
      'serving',
      'length',
      'concurrency',
      'scale',
      'distributed',
      'ablation',
      'breakdown',
      'combos',
    ]) {
      expect(r.stdout, suite).toMatch(new RegExp(`^  ${suite} +~[\\d.]+ (s|min)  \\S`, 'm'));
    }
  });
});

describe('progress on a non-terminal', () => {
  it('simulate and optimize print whole newline-terminated progress lines, no carriage returns', async () => {
    const trace = path.join(tmp, 'sim.jsonl');
    const sim = await cli(['simulate', '--requests', '40', '--concurrency', '8', '--tokens', '64', '--trace', trace]);
    expect(sim.code, sim.stderr).toBe(0);
    expect(sim.stderr).not.toContain('\r');
    const lines = sim.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(2);
    for (const l of lines) expect(l).toMatch(/^\d+\/40 requests$/);
    expect(lines.at(-1)).toBe('40/40 requests');

    const opt = await cli(['optimize', '--trace', trace]);
    expect(opt.code, opt.stderr).toBe(0);
    expect(opt.stderr).not.toContain('\r');
    expect(opt.stderr).toMatch(/^read \d+ events from .*sim\.jsonl; estimating routing and step latency/m);
    expect(opt.stderr).toMatch(/^thresholds: (\d+)\/\1 candidate thresholds priced$|^thresholds: \d+ candidates priced \(coordinate search\)$/m);
    expect(opt.stdout).toMatch(/^thresholds small=\d+,large=\d+: predicted/m);
  });
});

// tokenrouter eval refuses a bad task, split, plan or --choose before it loads any model, naming what it takes; by default it runs the bundled family on the word-problems task.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { evalCommand } from '../../runtime/cli/evalCommand.ts';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

describe('tokenrouter eval flags', () => {
  it('names the splits and plans, and keeps --choose to the validation ensemble run', async () => {
    await expect(evalCommand(['--split', 'train'])).rejects.toThrow(/unknown split "train"; splits: validation, heldout/);
    await expect(evalCommand(['--plan', 'all'])).rejects.toThrow(/unknown plan "all"; plans: default, ensemble, heads/);
    await expect(evalCommand(['--plan', 'ensemble', '--choose', '/tmp/x.json'])).rejects.toThrow(/needs --plan ensemble or heads and --split validation/);
    await expect(evalCommand(['--split', 'validation', '--choose', '/tmp/x.json'])).rejects.toThrow(/needs --plan ensemble or heads and --split validation/);
    await expect(evalCommand(['--plan', 'heads'])).rejects.toThrow(/the heads plan calibrates thresholds: run it on --split validation/);
    await expect(evalCommand(['--split', 'validation', '--problems', '1001'])).rejects.toThrow(/--problems must be an integer from 1 to 1000/);
  });

  it('names a task that is not bundled and not on disk, and a split the task folder lacks', async () => {
    await expect(evalCommand(['--task', '/nonexistent/task'])).rejects.toThrow(
      /no bundled task "\/nonexistent\/task" \(bundled: word-problems, multiplication\) and no file or folder at \/nonexistent\/task/,
    );
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-evaltask-'));
    fs.writeFileSync(path.join(dir, 'task.json'), JSON.stringify({ name: 'yes-no', grader: { kind: 'exact' } }));
    fs.writeFileSync(path.join(dir, 'validation.jsonl'), `${JSON.stringify({ prompt: 'yes?', answer: 'yes' })}\n`);
    await expect(evalCommand(['--task', dir])).rejects.toThrow(/task "yes-no" \(.*\) has no heldout split: no heldout\.jsonl beside task\.json/);
    await expect(evalCommand(['--task', dir, '--split', 'validation', '--problems', '2'])).rejects.toThrow(/--problems must be an integer from 1 to 1/);
    fs.rmSync(dir, { recursive: true });
  });

  it('plans no router-head point a models folder cannot run: the heads plan is refused, the default plan skips them', async () => {
    // the tiny fixture family, but a small that ships no routers/ (a plain export)
    const bundled = TINY_FAMILY_DIR;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-evalheads-'));
    for (const f of fs.readdirSync(bundled)) if (f !== 'small') fs.symlinkSync(path.join(bundled, f), path.join(dir, f));
    fs.mkdirSync(path.join(dir, 'small'));
    for (const f of fs.readdirSync(path.join(bundled, 'small')))
      if (f !== 'routers') fs.symlinkSync(path.join(bundled, 'small', f), path.join(dir, 'small', f));
    await expect(evalCommand(['--models', dir, '--plan', 'heads', '--split', 'validation'])).rejects.toThrow(
      /the heads plan calibrates router heads citer, citer-tf, r2r, r2r-tf, colm, colm-tf, which .* does not ship \(has: none\); train them with examples\/training\/trainRouters\.py/,
    );
    const said: string[] = [];
    const err = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void said.push(a.join(' ')));
    const json = path.join(dir, 'out.json');
    try {
      expect(
        await evalCommand([
          '--models',
          dir,
          '--task',
          'multiplication',
          '--split',
          'validation',
          '--problems',
          '1',
          '--only',
          'small-only',
          '--json',
          json,
          '--out',
          dir,
        ]),
      ).toBe(0);
    } finally {
      err.mockRestore();
    }
    expect(said.join('\n')).toMatch(/skipping \d+ router-head points: .* ships no citer, r2r, colm head \(has: none\)/);
    expect(fs.readFileSync(json, 'utf8')).toMatch(/small-only/);
    fs.rmSync(dir, { recursive: true });
  }, 120_000);

  it('by default evaluates the bundled word-problem family on the word-problems held-out split, with room for its answers', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-evaldefault-'));
    const json = path.join(dir, 'out.json');
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      expect(await evalCommand(['--problems', '2', '--only', 'small-only', '--json', json, '--out', dir])).toBe(0);
    } finally {
      err.mockRestore();
    }
    const out = JSON.parse(fs.readFileSync(json, 'utf8')) as { settings: Record<string, unknown>; results: { entries: { name: string; problems: number }[] } };
    expect(out.settings).toMatchObject({
      task: 'word-problems',
      task_source: 'bundled',
      grader: { kind: 'final-number' },
      split: 'heldout',
      split_size: 2000,
      split_file: 'examples/tasks/word-problems/heldout.jsonl',
      maxTokens: 128,
    });
    expect(out.results.entries.map((e) => [e.name, e.problems])).toEqual([
      ['small-only', 2],
      ['large-only', 2],
    ]);
    fs.rmSync(dir, { recursive: true });
  }, 120_000);
});

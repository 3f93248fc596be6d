// The server's V8 flags reach every way a user starts it: npm's scripts, the bin's first line, spawned sub-servers.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SERVER_NODE_FLAGS, gcHint, gcMode } from '../../runtime/cli/nodeFlags.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'runtime/cli/tokenrouter.mjs');

describe('server node flags', () => {
  it('npm start and npm run bench pass every flag to tsx', () => {
    const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
    for (const name of ['start', 'bench']) {
      const words = scripts[name].split(/\s+/);
      expect(words[0], name).toBe('tsx');
      for (const f of SERVER_NODE_FLAGS) expect(words.indexOf(f), `${name}: ${scripts[name]}`).toBeGreaterThan(0);
    }
  });

  it("the bin's first line runs node with every flag, and the bin runs", async () => {
    const first = fs.readFileSync(BIN, 'utf8').split('\n')[0];
    expect(first).toBe(`#!/usr/bin/env -S node ${SERVER_NODE_FLAGS.join(' ')}`);
    // executed through its first line, as npx and a systemd unit run it
    const { stdout } = await promisify(execFile)(BIN, ['models', '--dir', path.join(ROOT, 'examples/models')], { cwd: ROOT });
    expect(stdout).toMatch(/^ok\s+small/m);
  });

  it('hints at the flag only on a small machine started without it', () => {
    // vitest's workers run without it
    expect(gcMode()).toBe('parallel');
    expect(gcHint(2)).toContain('--single-threaded-gc');
    expect(gcHint(1)).toContain('1-core');
    expect(gcHint(8)).toBeUndefined();
  });
});

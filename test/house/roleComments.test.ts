// Every product module in runtime/ and shared/ opens with one comment line saying its role (after a shebang, if any).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOTS = ['runtime', 'shared'];
const SOURCE = /\.(ts|tsx|mjs)$/;

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : SOURCE.test(e.name) ? [p] : [];
  });
}

/** Why the file's opening fails the rule, or null when it states its role on one line. */
function roleProblem(text: string): string | null {
  const lines = text.split('\n');
  if (lines[0]?.startsWith('#!')) lines.shift();
  const [first = '', second = ''] = lines;
  if (!first.startsWith('// ')) return 'does not open with a // comment';
  if (first.slice(3).trim().length < 15) return 'opens with a comment too short to say a role';
  // a role wrapped onto the next line reads as two lines: a second comment line must follow a finished one
  if (second.startsWith('//') && !/[.:!?]$/.test(first.trimEnd())) return 'its role comment runs onto a second line';
  return null;
}

describe('module role comments', () => {
  it('tells a missing, empty or wrapped role from a one-line one', () => {
    expect(roleProblem("import x from 'y';\n")).toMatch(/does not open/);
    expect(roleProblem('// Role.\n')).toMatch(/too short/);
    expect(roleProblem('// The scheduler of every lane, which\n// decides when a batch launches.\n')).toMatch(/second line/);
    expect(roleProblem('#!/usr/bin/env node\n// The command line entry: parses flags, runs a command.\nimport a from "b";\n')).toBeNull();
    expect(roleProblem('// Open-addressing hash from packed keys to dense indices.\n// Why: a Map boxes every key.\n')).toBeNull();
  });

  it('holds for every module in runtime/ and shared/', () => {
    const files = ROOTS.flatMap((r) => sources(r));
    expect(files.length).toBeGreaterThan(100);
    const bad = files.map((f) => [f, roleProblem(fs.readFileSync(f, 'utf8'))]).filter(([, why]) => why !== null);
    expect(bad).toEqual([]);
  });
});

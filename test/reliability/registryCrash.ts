// Kill -9 rounds for the registry: a child deploys in a loop, dies mid-way, and the survivor store is checked version by version.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { builtinFactory } from '../../examples/algorithms/index.ts';
import { compileIr } from '../../runtime/ir/compileIr.ts';
import type { AlgorithmSpec } from '../../shared/api/admin.ts';
import { AlgorithmRegistry } from '../../runtime/registry/algorithmRegistry.ts';
import { RIG_CATALOG } from './irFixtures.ts';
import { expectedSpec, NAMES } from './registrySpecs.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHILD = path.join(ROOT, 'test/reliability/registryChild.ts');

export interface CrashRound {
  /** Lines the child wrote before it was killed: "begin" before a create, the change after its transaction returned. */
  announced: string[];
  /** Signal the child died of. */
  signal: NodeJS.Signals | null;
}

/** Starts the child on `dataDir`, lets it announce `killAfter` changes, then kills it with SIGKILL. */
export function crashRound(dataDir: string, seed: number, killAfter: number): Promise<CrashRound> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dataDir, String(seed)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const announced: string[] = [];
    let buf = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        announced.push(l);
        if (announced.length === killAfter) child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (_code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`registry child exited by itself (${signal ?? _code}): ${err.slice(0, 500)}`));
      else resolve({ announced, signal });
    });
  });
}

/** Builds the algorithm a stored spec describes, as the server would; throws if it cannot. */
function instantiate(spec: AlgorithmSpec): void {
  if (spec.kind === 'builtin') builtinFactory(spec.factory)(spec.params);
  else compileIr(spec.ir, { models: RIG_CATALOG });
}

export interface RegistryCheck {
  problems: string[];
  versions: number;
  /**
   * Where the kill landed: 'in-create' when the last line was a "begin" (inside createVersion),
   * then whether that version was committed (present) or rolled back (absent); 'between' otherwise.
   */
  killedAt: 'in-create-committed' | 'in-create-rolled-back' | 'between';
}

/**
 * Reopens the store after a kill and checks: SQLite integrity; versions 1..n with no gap, each
 * exactly the spec the child wrote; every announced version present; every active pointer naming a
 * stored version that builds.
 */
export function checkRegistry(dataDir: string, announced: readonly string[]): RegistryCheck {
  const problems: string[] = [];
  const registry = new AlgorithmRegistry(dataDir);
  let versions = 0;
  let killedAt: RegistryCheck['killedAt'] = 'between';
  try {
    const db = new Database(path.join(dataDir, 'registry.sqlite'), { readonly: true });
    const integrity = db.pragma('integrity_check', { simple: true });
    db.close();
    if (integrity !== 'ok') problems.push(`integrity_check: ${String(integrity)}`);
    for (const name of NAMES) {
      const entry = registry.get(name);
      const list = entry?.versions ?? [];
      versions += list.length;
      list.forEach((v, i) => {
        if (v.version !== i + 1) problems.push(`${name}: version ${v.version} at index ${i} (a gap)`);
        if (JSON.stringify(v.spec) !== JSON.stringify(expectedSpec(name, v.version)))
          problems.push(`${name} v${v.version}: spec differs from what was written`);
      });
      if (entry && entry.activeVersion !== null) {
        const active = registry.active(name);
        if (!active) problems.push(`${name}: active version ${entry.activeVersion} is not stored`);
        else {
          try {
            instantiate(active.spec);
          } catch (e) {
            problems.push(`${name}: active version ${active.version} does not build: ${(e as Error).message}`);
          }
        }
      }
    }
    for (const line of announced) {
      const [op, name, v] = line.split(' ');
      if (op === 'created' && !registry.version(name, Number(v))) problems.push(`${name} v${v} was committed and announced, then lost`);
    }
    const last = announced.at(-1)?.split(' ') ?? [];
    if (last[0] === 'begin') killedAt = registry.version(last[1], Number(last[2])) ? 'in-create-committed' : 'in-create-rolled-back';
  } finally {
    registry.close();
  }
  return { problems, versions, killedAt };
}

// The exact spec the registry crash child stores for (name, version), so the parent can check each survivor byte for byte.
import type { AlgorithmSpec } from '../../shared/api/admin.ts';
import { chainIr } from './irFixtures.ts';

export const NAMES = ['crash-a', 'crash-b', 'crash-c'];

let ir: ReturnType<typeof chainIr> | undefined;

/** Odd versions: a built-in with parameters; even ones: a 200-node IR (~26 kB a write, so kills land mid-transaction). */
export function expectedSpec(name: string, version: number): AlgorithmSpec {
  if (version % 2 === 1) return { kind: 'builtin', factory: 'r2r', params: { tau: (version % 97) / 100 } };
  ir ??= chainIr(200);
  return { kind: 'ir', ir: { ...ir, name: `${name}-v${version}` } };
}

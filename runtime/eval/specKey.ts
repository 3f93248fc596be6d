// The key of an algorithm's behaviour: an evaluation's statistics found again by the deploy of the same spec.
import crypto from 'node:crypto';
import type { AlgorithmSpec } from '../../shared/api/admin.ts';

/**
 * The same behaviour always gives the same key, whether it came from an evaluation or the registry:
 * an IR's name, description and layout are left out, since a draft is evaluated, then named, then deployed.
 */
export function specKey(spec: AlgorithmSpec): string {
  const behaviour = (ir: unknown) => {
    if (ir === null || typeof ir !== 'object' || Array.isArray(ir)) return ir;
    const { name: _n, description: _d, layout: _l, ...rest } = ir as Record<string, unknown>;
    return rest;
  };
  const canonical = spec.kind === 'ir' ? { kind: 'ir', ir: behaviour(spec.ir) } : { kind: 'builtin', factory: spec.factory, params: spec.params };
  return crypto.createHash('sha256').update(JSON.stringify(canonical)).digest('hex').slice(0, 32);
}

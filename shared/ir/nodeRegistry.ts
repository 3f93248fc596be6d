// The node registry: every node type's module listed once, in palette order; the validator, the IR interpreter and the designer all read it.
import type { ParamValue } from './nodeTypes.ts';
import type { NodeTypeDef } from './nodeTypeDef.ts';
import { constant } from './nodes/constant/constant.ts';
import { flag } from './nodes/constant/flag.ts';
import { drawModel } from './nodes/decision/drawModel.ts';
import { handBack } from './nodes/decision/handBack.ts';
import { handoff } from './nodes/decision/handoff.ts';
import { stay } from './nodes/decision/stay.ts';
import { and } from './nodes/logic/and.ts';
import { arith } from './nodes/logic/arith.ts';
import { compare } from './nodes/logic/compare.ts';
import { minMax } from './nodes/logic/minMax.ts';
import { not } from './nodes/logic/not.ts';
import { or } from './nodes/logic/or.ts';
import { probOf } from './nodes/logic/probOf.ts';
import { tokenMatch } from './nodes/logic/tokenMatch.ts';
import { topKMass } from './nodes/logic/topKMass.ts';
import { counter } from './nodes/memory/counter.ts';
import { movingAverage } from './nodes/memory/movingAverage.ts';
import { receiveAccept } from './nodes/receive/receiveAccept.ts';
import { receiveCommit } from './nodes/receive/receiveCommit.ts';
import { distribution } from './nodes/signal/distribution.ts';
import { draw } from './nodes/signal/draw.ts';
import { entropy } from './nodes/signal/entropy.ts';
import { generated } from './nodes/signal/generated.ts';
import { head } from './nodes/signal/head.ts';
import { margin } from './nodes/signal/margin.ts';
import { maxProb } from './nodes/signal/maxProb.ts';
import { position } from './nodes/signal/position.ts';
import { sampledToken } from './nodes/signal/sampledToken.ts';
import { stepsHere } from './nodes/signal/stepsHere.ts';
import { tokenProb } from './nodes/signal/tokenProb.ts';
import { start } from './nodes/start/start.ts';

export interface NodeRegistry {
  /** Every node type, in palette order. */
  readonly defs: readonly NodeTypeDef[];
  get(type: string): NodeTypeDef | undefined;
}

/** A registry of `defs`; a type name given twice is a programming error. */
export function createNodeRegistry(defs: readonly NodeTypeDef[]): NodeRegistry {
  const byType = new Map<string, NodeTypeDef>();
  for (const d of defs) {
    if (byType.has(d.type)) throw new Error(`node type "${d.type}" is defined twice`);
    byType.set(d.type, d);
  }
  return { defs: [...defs], get: (type) => byType.get(type) };
}

export const BUILTIN_NODE_TYPES: readonly NodeTypeDef[] = [
  start,
  entropy,
  maxProb,
  margin,
  tokenProb,
  head,
  sampledToken,
  distribution,
  stepsHere,
  position,
  generated,
  draw,
  constant,
  flag,
  compare,
  and,
  or,
  not,
  arith,
  minMax,
  tokenMatch,
  topKMass,
  probOf,
  counter,
  movingAverage,
  stay,
  handoff,
  handBack,
  drawModel,
  receiveAccept,
  receiveCommit,
];

/** The registry the product reads; tests build their own with createNodeRegistry. */
export const NODE_REGISTRY = createNodeRegistry(BUILTIN_NODE_TYPES);

export function nodeSpec(type: string, registry: NodeRegistry = NODE_REGISTRY): NodeTypeDef | undefined {
  return registry.get(type);
}

/** A fresh copy of every parameter's default; throws on a type the registry does not hold. */
export function defaultParams(type: string, registry: NodeRegistry = NODE_REGISTRY): Record<string, ParamValue> {
  const def = registry.get(type);
  if (!def) throw new Error(`unknown node type "${type}"`);
  const out: Record<string, ParamValue> = {};
  for (const p of def.params) out[p.name] = structuredClone(p.default as ParamValue);
  return out;
}

// The contract every node type module exports: its spec, its canvas summary, and how the IR interpreter evaluates it.
// Evaluation hooks run once at deploy and return closures or plain data; the interpreter composes them, nothing is generated.
import type { RouteInput } from '../algorithm.ts';
import type { NodeSpec, ParamValue } from './nodeTypes.ts';

export type Params = Readonly<Record<string, ParamValue>>;
/** One step as a node reads it; the algorithm's metadata belongs to the interpreter, not to nodes. */
export type StepInput = RouteInput<unknown>;
/** A number or token value of one step. */
export type NumFn = (x: StepInput) => number;
/** A boolean value of one step. */
export type BoolFn = (x: StepInput) => boolean;
/** A value node's output: a number (tokens included) or a boolean, matching its output port's type. */
export type ValueFn = { num: NumFn } | { bool: BoolFn };

/** RouteInput fields a signal may read directly. */
export type SignalField = 'entropy' | 'maxProb' | 'margin' | 'tokenProb' | 'stepsHere' | 'position' | 'generated' | 'draw' | 'token';

/** Where a signal's value comes from: a RouteInput field, or (field null) the router head `head`, NaN when absent. */
export interface SignalRead {
  field: SignalField | null;
  head: string;
}

/**
 * A condition as data: a signal compared with a fixed number. The interpreter tests it inline, with no
 * closure calls (closure call sites shared by every deployed graph go megamorphic).
 */
export interface Guard extends SignalRead {
  /** Index in COMPARE_OPS. */
  op: number;
  value: number;
}

export const COMPARE_OPS = ['>', '>=', '<', '<=', '==', '!='] as const;

/** What a node's evaluation may ask at deploy: its parameters, and the closures and sources of its inputs. */
export interface EvalContext {
  params: Params;
  /** Whether the input is connected. */
  has(port: string): boolean;
  /** The closure of a connected number or token input. */
  num(port: string): NumFn;
  /** The closure of a connected boolean input. */
  bool(port: string): BoolFn;
  /** Entries a connected distribution input offers (its source's top-k). */
  topK(port: string): number;
  /** The signal feeding the input directly, or null when another kind of node feeds it. */
  signal(port: string): SignalRead | null;
  /** The input's value when it is fixed at deploy (a constant feeds it), else null. */
  fixed(port: string): number | null;
  /** Token texts of the node's model by id; empty when the server gave none. */
  vocab: readonly string[];
}

/** Extras the runner must compute for a signal on its model. */
export interface Wants {
  topK?: number;
  heads?: readonly string[];
}

/**
 * What a decision does when it fires (its optional `when` input holds, or is unconnected). Models by name.
 * `to` null stays; `after` fires only from the after-th consecutive call on the model in one visit.
 * A draw picks a model by `weights` with the uniform number on input `u` (unconnected: the seeded draw); drawing its own model stays.
 */
export type Route = { to: string | null; keep: boolean; after?: number } | { weights: Readonly<Record<string, number>>; keep: boolean; u: string };

interface Common extends NodeSpec {
  /** One line under the node's title on the canvas; `connected` names its connected inputs. */
  summary(params: Params, connected: ReadonlySet<string>): string;
}

/** The entry model (`model`): prefills the prompt and decodes first. */
export interface StartDef extends Common {
  category: 'start';
}

/** Reads one value of the step on its `model`; null for a distribution, which its consumers read through `topK`. */
export interface SignalDef extends Common {
  category: 'signal';
  read(params: Params): SignalRead | null;
  wants?(params: Params): Wants;
}

export interface ValueDef extends Common {
  category: 'constant' | 'logic';
  evaluate(ctx: EvalContext): ValueFn;
  /** A constant's value, known at deploy. */
  fixed?(params: Params): number;
  /** The node's condition as a Guard when it has that shape. */
  guard?(ctx: EvalContext): Guard | null;
  /** Why evaluation needs the model vocabulary, when it does; without one the deploy fails with needs_vocab. */
  needsVocab?(params: Params): { reason: string; fix: string } | null;
}

/** Per-request state with outputs `value` (after this step's update) and `prev` (before it, so it may close a loop). */
export interface MemoryDef extends Common {
  category: 'memory';
  initial(params: Params): number;
  /** The next value from the current one; a non-finite result is dropped. */
  update(ctx: EvalContext): (x: StepInput, value: number) => number;
}

/** Tried on its `model` by `priority` (lower first); the first that fires wins. */
export interface DecisionDef extends Common {
  category: 'decision';
  route(params: Params): Route;
}

/** What its `model` does when a request arrives from a peer: accept it, restarting the memories listed. */
export interface ReceiveDef extends Common {
  category: 'receive';
  resetOnArrival?(params: Params): readonly string[];
}

export type NodeTypeDef = StartDef | SignalDef | ValueDef | MemoryDef | DecisionDef | ReceiveDef;

/** A memory's `prev` output is last step's value: edges from it may close a cycle. */
export function isCycleBreaking(def: NodeTypeDef | undefined, port: string): boolean {
  return def?.category === 'memory' && port === 'prev';
}

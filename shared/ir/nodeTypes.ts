// The vocabulary node types are written in: port and parameter kinds, node categories and the bounds of a document.

/** What flows along an edge. Booleans and tokens travel as numbers at run time, but never mix in a graph. */
export type PortType = 'number' | 'boolean' | 'token' | 'distribution';

export interface PortSpec {
  name: string;
  type: PortType;
  label: string;
  /** Optional inputs fall back to a documented default (usually a parameter or "true"). */
  optional?: boolean;
}

export type ParamValue = number | boolean | string | readonly number[] | readonly string[] | Readonly<Record<string, number>>;

export type ParamSpec =
  | {
      kind: 'number';
      name: string;
      label: string;
      min: number;
      max: number;
      minExclusive?: boolean;
      default: number;
      help?: string;
      /** The input that takes this value's place when it is connected. */
      replacedBy?: string;
    }
  | { kind: 'int'; name: string; label: string; min: number; max: number; default: number; help?: string }
  | { kind: 'boolean'; name: string; label: string; default: boolean; help?: string }
  | { kind: 'enum'; name: string; label: string; options: readonly string[]; default: string; help?: string }
  /** A model name from the deployable catalog. */
  | { kind: 'model'; name: string; label: string; default: string; help?: string }
  /** A router-head name offered by the node's model. */
  | { kind: 'head'; name: string; label: string; default: string; help?: string }
  | { kind: 'text'; name: string; label: string; maxLength: number; default: string; help?: string }
  | { kind: 'ids'; name: string; label: string; maxItems: number; default: readonly number[]; help?: string }
  /** Model name → non-negative weight. */
  | { kind: 'weights'; name: string; label: string; default: Readonly<Record<string, number>>; help?: string }
  /** Ids of memory nodes in the same graph. */
  | { kind: 'memoryRefs'; name: string; label: string; maxItems: number; default: readonly string[]; help?: string };

export type NodeCategory = 'start' | 'signal' | 'constant' | 'logic' | 'memory' | 'decision' | 'receive';

/** A node type's name: any name the node registry holds (a registry can be extended, so this is checked at run time). */
export type NodeType = string;

/** What the designer draws and the validator checks of a node type: its ports and parameters. */
export interface NodeSpec {
  type: NodeType;
  category: NodeCategory;
  label: string;
  description: string;
  inputs: readonly PortSpec[];
  outputs: readonly PortSpec[];
  params: readonly ParamSpec[];
}

/** Bounds that keep one route() call cheap and every document small. */
export const LIMITS = Object.freeze({
  maxNodes: 200,
  maxEdges: 400,
  maxIdLength: 64,
  maxNameLength: 64,
  maxTopK: 64,
  maxTokenIds: 256,
  maxHandBack: 1024,
  maxAbsValue: 1e9,
});

// The node palette of the algorithm graph: every node type with its typed ports and parameter ranges.

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
  | { kind: 'number'; name: string; label: string; min: number; max: number; minExclusive?: boolean; default: number; help?: string }
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

export interface NodeSpec {
  type: string;
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

const modelParam = (label = 'Model', def = 'small', help?: string): ParamSpec => ({ kind: 'model', name: 'model', label, default: def, help });
const priority: ParamSpec = { kind: 'int', name: 'priority', label: 'Priority', min: 0, max: 99, default: 10, help: 'Lower runs first; the first decision that fires wins.' };
const value = (label: string, def: number, help?: string): ParamSpec => ({ kind: 'number', name: 'value', label, min: -LIMITS.maxAbsValue, max: LIMITS.maxAbsValue, default: def, help });
const when: PortSpec = { name: 'when', type: 'boolean', label: 'when', optional: true };
const num = (name: string, label = name, optional = false): PortSpec => ({ name, type: 'number', label, optional });
const bool = (name: string, label = name, optional = false): PortSpec => ({ name, type: 'boolean', label, optional });

function signal(type: string, label: string, description: string, out: PortSpec = num('out', label.toLowerCase()), extra: readonly ParamSpec[] = []): NodeSpec {
  return { type, category: 'signal', label, description, inputs: [], outputs: [out], params: [modelParam('On model', 'small', 'Read this signal when the request is on this model.'), ...extra] };
}

export const NODE_TYPES = {
  start: {
    type: 'start',
    category: 'start',
    label: 'Start',
    description: 'The entry model: it prefills the prompt and decodes first.',
    inputs: [],
    outputs: [],
    params: [modelParam('Entry model')],
  },
  entropy: signal('entropy', 'Entropy', 'Normalised entropy of the next-token distribution, in [0, 1].'),
  maxProb: signal('maxProb', 'Max prob', 'Largest probability of the next-token distribution.'),
  margin: signal('margin', 'Top-2 margin', 'Difference between the two largest probabilities.'),
  tokenProb: signal('tokenProb', 'Token prob', 'Probability of the sampled token.'),
  head: signal('head', 'Router head', 'Output of a router network shipped with the model (e.g. citer, r2r, colm).', num('out', 'score'), [
    { kind: 'head', name: 'head', label: 'Head', default: 'citer' },
  ]),
  sampledToken: signal('sampledToken', 'Sampled token', 'The token id just sampled.', { name: 'out', type: 'token', label: 'token' }),
  distribution: signal('distribution', 'Distribution', 'Top-k of the next-token distribution.', { name: 'out', type: 'distribution', label: 'top-k' }, [
    { kind: 'int', name: 'topK', label: 'Top k', min: 1, max: LIMITS.maxTopK, default: 8 },
  ]),
  stepsHere: signal('stepsHere', 'Steps here', 'Forward passes on this model since the request last arrived.'),
  position: signal('position', 'Position', 'Position of the sampled token in the whole sequence (prompt included).'),
  generated: signal('generated', 'Generated', 'Output tokens committed so far.'),
  draw: signal('draw', 'Random draw', 'A uniform draw in [0, 1), seeded per request, position and model: reproducible.'),
  constant: {
    type: 'constant',
    category: 'constant',
    label: 'Constant',
    description: 'A fixed number, e.g. a threshold shared by several comparisons.',
    inputs: [],
    outputs: [num('out', 'value')],
    params: [value('Value', 0.03)],
  },
  flag: {
    type: 'flag',
    category: 'constant',
    label: 'Flag',
    description: 'A fixed true/false.',
    inputs: [],
    outputs: [bool('out', 'value')],
    params: [{ kind: 'boolean', name: 'value', label: 'Value', default: true }],
  },
  compare: {
    type: 'compare',
    category: 'logic',
    label: 'Compare',
    description: 'a <op> b; b defaults to the Value parameter when unconnected.',
    inputs: [num('a'), num('b', 'b', true)],
    outputs: [bool('out', 'result')],
    params: [{ kind: 'enum', name: 'op', label: 'Operator', options: ['>', '>=', '<', '<=', '==', '!='], default: '>' }, value('Value (b)', 0.03)],
  },
  and: { type: 'and', category: 'logic', label: 'And', description: 'Both inputs true.', inputs: [bool('a'), bool('b')], outputs: [bool('out', 'a ∧ b')], params: [] },
  or: { type: 'or', category: 'logic', label: 'Or', description: 'Either input true.', inputs: [bool('a'), bool('b')], outputs: [bool('out', 'a ∨ b')], params: [] },
  not: { type: 'not', category: 'logic', label: 'Not', description: 'Negation.', inputs: [bool('a')], outputs: [bool('out', '¬a')], params: [] },
  arith: {
    type: 'arith',
    category: 'logic',
    label: 'Arithmetic',
    description: 'a <op> b; b defaults to the Value parameter. Division by zero gives 0.',
    inputs: [num('a'), num('b', 'b', true)],
    outputs: [num('out', 'result')],
    params: [{ kind: 'enum', name: 'op', label: 'Operator', options: ['+', '-', '*', '/'], default: '*' }, value('Value (b)', 1)],
  },
  minMax: {
    type: 'minMax',
    category: 'logic',
    label: 'Min / Max',
    description: 'The smaller or larger of a and b.',
    inputs: [num('a'), num('b')],
    outputs: [num('out', 'result')],
    params: [{ kind: 'enum', name: 'op', label: 'Operator', options: ['min', 'max'], default: 'max' }],
  },
  tokenMatch: {
    type: 'tokenMatch',
    category: 'logic',
    label: 'Token match',
    description: 'True when the token is one of the ids, or its text matches (text needs the model vocabulary at deploy).',
    inputs: [{ name: 'token', type: 'token', label: 'token' }],
    outputs: [bool('out', 'match')],
    params: [
      { kind: 'ids', name: 'ids', label: 'Token ids', maxItems: LIMITS.maxTokenIds, default: [] },
      { kind: 'text', name: 'text', label: 'Text', maxLength: 64, default: '' },
      { kind: 'enum', name: 'match', label: 'Text match', options: ['exact', 'contains'], default: 'exact' },
    ],
  },
  topKMass: {
    type: 'topKMass',
    category: 'logic',
    label: 'Top-k mass',
    description: 'Total probability of the k most likely tokens.',
    inputs: [{ name: 'dist', type: 'distribution', label: 'dist' }],
    outputs: [num('out', 'mass')],
    params: [{ kind: 'int', name: 'k', label: 'k', min: 1, max: LIMITS.maxTopK, default: 2 }],
  },
  probOf: {
    type: 'probOf',
    category: 'logic',
    label: 'Prob of token',
    description: 'Probability the distribution gives a token (0 outside its top-k).',
    inputs: [{ name: 'dist', type: 'distribution', label: 'dist' }, { name: 'token', type: 'token', label: 'token' }],
    outputs: [num('out', 'p')],
    params: [],
  },
  counter: {
    type: 'counter',
    category: 'memory',
    label: 'Counter',
    description: 'Per-request count kept in the request metadata. Adds Step when inc is true (always, if unconnected).',
    inputs: [bool('inc', 'inc', true), bool('reset', 'reset', true)],
    outputs: [num('value', 'value'), num('prev', 'prev')],
    params: [value('Initial', 0), { kind: 'number', name: 'step', label: 'Step', min: -1e6, max: 1e6, default: 1 }],
  },
  movingAverage: {
    type: 'movingAverage',
    category: 'memory',
    label: 'Moving average',
    description: 'Exponential moving average v ← α·x + (1−α)·v kept in the request metadata.',
    inputs: [num('x'), bool('reset', 'reset', true)],
    outputs: [num('value', 'value'), num('prev', 'prev')],
    params: [
      { kind: 'number', name: 'alpha', label: 'α', min: 0, max: 1, minExclusive: true, default: 0.5 },
      value('Initial', 0),
    ],
  },
  stay: {
    type: 'stay',
    category: 'decision',
    label: 'Stay',
    description: 'Keep decoding on this model.',
    inputs: [when],
    outputs: [],
    params: [modelParam('On model'), priority],
  },
  handoff: {
    type: 'handoff',
    category: 'decision',
    label: 'Hand off',
    description: 'Send the request to another model, keeping or discarding the token just sampled.',
    inputs: [when],
    outputs: [],
    params: [
      modelParam('On model'),
      { kind: 'model', name: 'to', label: 'To model', default: 'large' },
      { kind: 'boolean', name: 'keep', label: 'Keep token', default: false, help: 'Off: the peer regenerates this position.' },
      priority,
    ],
  },
  handBack: {
    type: 'handBack',
    category: 'decision',
    label: 'Hand back after N',
    description: 'After N tokens on this model in one visit, return to a model. Those tokens are kept.',
    inputs: [when],
    outputs: [],
    params: [
      modelParam('On model', 'large'),
      { kind: 'model', name: 'to', label: 'To model', default: 'small' },
      { kind: 'int', name: 'after', label: 'After N tokens', min: 1, max: LIMITS.maxHandBack, default: 1 },
      priority,
    ],
  },
  drawModel: {
    type: 'drawModel',
    category: 'decision',
    label: 'Draw model',
    description: 'Pick the model of the next token by weights (u defaults to the seeded draw). Drawing this model stays.',
    inputs: [num('u', 'u', true), when],
    outputs: [],
    params: [
      modelParam('On model'),
      { kind: 'weights', name: 'weights', label: 'Weights', default: { small: 0.5, medium: 0.3, large: 0.2 } },
      { kind: 'boolean', name: 'keep', label: 'Keep token', default: true },
      priority,
    ],
  },
  receiveAccept: {
    type: 'receiveAccept',
    category: 'receive',
    label: 'Receive: accept',
    description: "Accept the peer's tokens and metadata as they are (the default).",
    inputs: [],
    outputs: [],
    params: [modelParam('On model')],
  },
  receiveCommit: {
    type: 'receiveCommit',
    category: 'receive',
    label: 'Receive: commit rule',
    description: "Accept the peer's tokens, then restart the listed memories: per-visit statistics for ensembles.",
    inputs: [],
    outputs: [],
    params: [modelParam('On model'), { kind: 'memoryRefs', name: 'reset', label: 'Reset memories', maxItems: 16, default: [] }],
  },
} as const satisfies Record<string, NodeSpec>;

export type NodeType = keyof typeof NODE_TYPES;

export function nodeSpec(type: string): NodeSpec | undefined {
  return Object.hasOwn(NODE_TYPES, type) ? (NODE_TYPES as Record<string, NodeSpec>)[type] : undefined;
}

export function defaultParams(type: NodeType): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = {};
  for (const p of NODE_TYPES[type].params) out[p.name] = structuredClone(p.default as ParamValue);
  return out;
}

/** Memory nodes' `prev` output is last step's value: edges from it may close a cycle. */
export function isCycleBreaking(type: string, port: string): boolean {
  return nodeSpec(type)?.category === 'memory' && port === 'prev';
}

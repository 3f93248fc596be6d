// Colours of node categories and port types on the canvas, shared by nodes, edges, palette and legend.
import type { NodeCategory, PortType } from '../../../shared/ir/nodeTypes.ts';

export const CATEGORY_COLORS: Record<NodeCategory, string> = {
  start: '#e2e8f0',
  signal: '#60a5fa',
  constant: '#94a3b8',
  logic: '#a78bfa',
  memory: '#fb923c',
  decision: '#34d399',
  receive: '#f472b6',
};

export const PORT_COLORS: Record<PortType, string> = {
  number: '#7dd3fc',
  boolean: '#fcd34d',
  token: '#f9a8d4',
  distribution: '#c4b5fd',
};

export const CATEGORY_TITLES: Record<NodeCategory, string> = {
  start: 'Start',
  signal: 'Signals',
  constant: 'Constants',
  logic: 'Operators',
  memory: 'Memory',
  decision: 'Decisions',
  receive: 'Receive policy',
};

/** Short category names, shown on nodes and in the inspector. */
export const CATEGORY_SHORT: Record<NodeCategory, string> = {
  start: 'start',
  signal: 'signal',
  constant: 'constant',
  logic: 'operator',
  memory: 'memory',
  decision: 'decision',
  receive: 'receive',
};

// Node `receiveCommit`: take a peer's tokens, then restart the listed memories (per-visit statistics for ensembles).
import type { ReceiveDef } from '../../nodeTypeDef.ts';
import { modelParam } from '../parts.ts';

export const receiveCommit: ReceiveDef = {
  type: 'receiveCommit',
  category: 'receive',
  label: 'Receive: commit rule',
  description: "Accept the peer's tokens, then restart the listed memories: per-visit statistics for ensembles.",
  inputs: [],
  outputs: [],
  params: [modelParam('On model'), { kind: 'memoryRefs', name: 'reset', label: 'Reset memories', maxItems: 16, default: [] }],
  resetOnArrival: (p) => p.reset as readonly string[],
  summary(p) {
    const r = p.reset as readonly string[];
    return `on ${p.model}${r.length ? ` · reset ${r.join(', ')}` : ''}`;
  },
};

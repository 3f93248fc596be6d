// Node `start`: names the entry model of the algorithm.
import type { StartDef } from '../../nodeTypeDef.ts';
import { modelParam } from '../parts.ts';

export const start: StartDef = {
  type: 'start',
  category: 'start',
  label: 'Start',
  description: 'The entry model: it prefills the prompt and decodes first.',
  inputs: [],
  outputs: [],
  params: [modelParam('Entry model')],
  summary: (p) => `entry · ${p.model}`,
};

// Colour per model by lane (lanes follow the server's model list, from the config event), distinct from the phase colours of batch boxes.
import { modelColorAt } from '../../../shared/modelColors.ts';

export const modelColor = (lane: number): string => modelColorAt(lane);

/** Colours of local and entry states in the request panel. */
export const STATE_COLORS: Record<string, string> = {
  admitted: '#6b7686',
  queued: '#7d8da3',
  running: '#3fb970',
  'pending-return': '#e3b341',
  streaming: '#4c9ff5',
  done: '#39424f',
  failed: '#f4645d',
  cancelled: '#9a6b6b',
};

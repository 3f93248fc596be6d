// Signal node `draw`: reads the step's `draw` field.
import { fieldSignal } from '../parts.ts';

export const draw = fieldSignal('draw', 'Random draw', 'A uniform draw in [0, 1), seeded per request, position and model: reproducible.');

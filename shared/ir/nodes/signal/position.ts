// Signal node `position`: reads the step's `position` field.
import { fieldSignal } from '../parts.ts';

export const position = fieldSignal('position', 'Position', 'Position of the sampled token in the whole sequence (prompt included).');

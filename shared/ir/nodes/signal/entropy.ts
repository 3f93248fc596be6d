// Signal node `entropy`: reads the step's `entropy` field.
import { fieldSignal } from '../parts.ts';

export const entropy = fieldSignal('entropy', 'Entropy', 'Normalised entropy of the next-token distribution, in [0, 1].');

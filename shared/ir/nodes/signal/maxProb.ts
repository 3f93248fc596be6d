// Signal node `maxProb`: reads the step's `maxProb` field.
import { fieldSignal } from '../parts.ts';

export const maxProb = fieldSignal('maxProb', 'Max prob', 'Largest probability of the next-token distribution.');

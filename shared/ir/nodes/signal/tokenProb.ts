// Signal node `tokenProb`: reads the step's `tokenProb` field.
import { fieldSignal } from '../parts.ts';

export const tokenProb = fieldSignal('tokenProb', 'Token prob', 'Probability of the sampled token.');

// Signal node `margin`: reads the step's `margin` field.
import { fieldSignal } from '../parts.ts';

export const margin = fieldSignal('margin', 'Top-2 margin', 'Difference between the two largest probabilities.');

// Signal node `generated`: reads the step's `generated` field.
import { fieldSignal } from '../parts.ts';

export const generated = fieldSignal('generated', 'Generated', 'Output tokens committed so far.');

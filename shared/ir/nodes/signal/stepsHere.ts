// Signal node `stepsHere`: reads the step's `stepsHere` field.
import { fieldSignal } from '../parts.ts';

export const stepsHere = fieldSignal('stepsHere', 'Steps here', 'Forward passes on this model since the request last arrived.');

// Signal node `sampledToken`: the token id just sampled, typed as a token so it feeds token inputs only.
import { fieldSignal } from '../parts.ts';

export const sampledToken = fieldSignal('sampledToken', 'Sampled token', 'The token id just sampled.', 'token', { name: 'out', type: 'token', label: 'token' });

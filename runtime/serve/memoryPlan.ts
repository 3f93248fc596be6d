// Joint memory planning: models sharing a machine split one budget for weights and KV caches.
import { TokenRouterError } from '../errors.ts';

export interface ModelMemoryNeeds {
  name: string;
  weightBytes: number;
  kvBytesPerToken: number;
  /** Longest sequence one request may hold. */
  maxContext: number;
  maxBatch: number;
}

export interface ModelMemoryPlan {
  name: string;
  weightBytes: number;
  kvBytes: number;
  kvTokens: number;
  /** Requests of full context that fit at once. */
  fullContextRequests: number;
}

/**
 * Weights come off the top; the rest goes to KV so that every model can hold the same number of
 * tokens (a request visits every model of its algorithm, so their caches fill in step). Refuses a
 * budget that cannot hold the weights plus one full-context request per model.
 */
export function planMemory(budgetBytes: number, models: readonly ModelMemoryNeeds[]): ModelMemoryPlan[] {
  const weights = models.reduce((s, m) => s + m.weightBytes, 0);
  const left = budgetBytes - weights;
  const perTokenAll = models.reduce((s, m) => s + m.kvBytesPerToken, 0);
  const tokens = Math.floor(left / perTokenAll);
  const minTokens = Math.max(...models.map((m) => m.maxContext));
  if (left <= 0 || tokens < minTokens) {
    const need = weights + minTokens * perTokenAll;
    throw new TokenRouterError(
      'invalid_request',
      `memory.budgetMiB is too small: weights take ${(weights / 2 ** 20).toFixed(1)} MiB and one full-context request needs ${((minTokens * perTokenAll) / 2 ** 20).toFixed(2)} MiB of KV; at least ${Math.ceil(need / 2 ** 20)} MiB are needed`,
      'memory.budgetMiB',
    );
  }
  return models.map((m) => ({
    name: m.name,
    weightBytes: m.weightBytes,
    kvBytes: tokens * m.kvBytesPerToken,
    kvTokens: tokens,
    fullContextRequests: Math.floor(tokens / m.maxContext),
  }));
}

// Joint memory planning: one budget for the whole process, split into what it already holds, each model's weights and step workspace, and KV.
import { TokenRouterError } from '../errors.ts';

export interface ModelMemoryNeeds {
  name: string;
  /** The model as loaded: measured resident growth when measured, else the weight file's size. */
  weightBytes: number;
  /** Resident growth of the largest step its token budget allows (activations, logits, ORT's arena); 0 when not measured. */
  workspaceBytes?: number;
  kvBytesPerToken: number;
  /** Longest sequence one request may hold. */
  maxContext: number;
  maxBatch: number;
}

export interface ModelMemoryPlan {
  name: string;
  weightBytes: number;
  workspaceBytes: number;
  kvBytes: number;
  kvTokens: number;
  /** Requests of full context that fit at once. */
  fullContextRequests: number;
}

/** What the process holds besides the models: itself before any model loaded, and room it keeps for the entry's own growth. */
export interface ProcessMemory {
  baseBytes: number;
  headroomBytes: number;
}

/** The whole split, as /healthz and /metrics report it. */
export interface MemorySplit extends ProcessMemory {
  budgetBytes: number;
  models: ModelMemoryPlan[];
}

/**
 * The process, the weights and the workspaces come off the top; the rest goes to KV (the prefix
 * cache lives inside it) so that every model can hold the same number of tokens (a request visits
 * every model of its algorithm, so their caches fill in step). Refuses a budget that cannot hold
 * all that plus one full-context request per model, saying what took the budget.
 */
export function planMemory(
  budgetBytes: number,
  models: readonly ModelMemoryNeeds[],
  proc: ProcessMemory = { baseBytes: 0, headroomBytes: 0 },
): ModelMemoryPlan[] {
  const weights = models.reduce((s, m) => s + m.weightBytes, 0);
  const workspace = models.reduce((s, m) => s + (m.workspaceBytes ?? 0), 0);
  const fixed = proc.baseBytes + proc.headroomBytes + weights + workspace;
  const left = budgetBytes - fixed;
  const perTokenAll = models.reduce((s, m) => s + m.kvBytesPerToken, 0);
  const tokens = Math.floor(left / perTokenAll);
  const minTokens = Math.max(...models.map((m) => m.maxContext));
  if (left <= 0 || tokens < minTokens) {
    const need = fixed + minTokens * perTokenAll;
    const mib = (b: number) => (b / 2 ** 20).toFixed(1);
    throw new TokenRouterError(
      'invalid_request',
      `memory.budgetMiB is too small: the process took ${mib(proc.baseBytes)} MiB before loading models, weights as loaded take ${mib(weights)} MiB, step workspaces ${mib(workspace)} MiB, headroom ${mib(proc.headroomBytes)} MiB, and one full-context request needs ${((minTokens * perTokenAll) / 2 ** 20).toFixed(2)} MiB of KV; at least ${Math.ceil(need / 2 ** 20)} MiB are needed`,
      'memory.budgetMiB',
    );
  }
  return models.map((m) => ({
    name: m.name,
    weightBytes: m.weightBytes,
    workspaceBytes: m.workspaceBytes ?? 0,
    kvBytes: tokens * m.kvBytesPerToken,
    kvTokens: tokens,
    fullContextRequests: Math.floor(tokens / m.maxContext),
  }));
}

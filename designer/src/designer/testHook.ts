// Test hook for end-to-end tests: window.__designer exposes the graph, issues, deploy/playground/evaluation state read-only, plus the store.
import type { GraphDocument } from '../../../shared/ir/graph.ts';
import type { IrIssue } from '../../../shared/ir/irIssue.ts';
import type { DesignerStore } from './designerStore.ts';
import type { PlaygroundState } from './playgroundRun.ts';
import type { EvaluateFlow, EvaluateState } from './evaluateFlow.ts';
import type { DeployState } from './registryFlow.ts';

export interface DesignerTestHook {
  graph(): GraphDocument;
  issues(): IrIssue[];
  errors(): IrIssue[];
  deploy(): DeployState;
  playground(): PlaygroundState;
  dirty(): boolean;
  evaluation(): EvaluateState;
  store: DesignerStore;
}

declare global {
  interface Window {
    __designer?: DesignerTestHook;
  }
}

export function installTestHook(store: DesignerStore, evaluation: EvaluateFlow): void {
  window.__designer = {
    graph: () => structuredClone(store.getState().graph),
    issues: () => structuredClone(store.getState().issues),
    errors: () => store.getState().issues.filter((i) => i.severity === 'error'),
    deploy: () => ({ ...store.getState().deploy }),
    playground: () => structuredClone(store.getState().playground),
    dirty: () => store.getState().dirty,
    evaluation: () => structuredClone(evaluation.getState()),
    store,
  };
}

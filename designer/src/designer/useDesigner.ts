// React access to the designer store: a context for the instance and a selector hook over useSyncExternalStore.
import { createContext, useContext, useSyncExternalStore } from 'react';
import type { DesignerState, DesignerStore } from './designerStore.ts';

export const StoreContext = createContext<DesignerStore | null>(null);

export function useStore(): DesignerStore {
  const store = useContext(StoreContext);
  if (!store) throw new Error('useStore outside <StoreContext.Provider>');
  return store;
}

/** Re-renders when the selected slice changes; selectors must return existing references or primitives. */
export function useDesigner<T>(select: (s: DesignerState) => T): T {
  const store = useStore();
  return useSyncExternalStore(store.subscribe, () => select(store.getState()));
}

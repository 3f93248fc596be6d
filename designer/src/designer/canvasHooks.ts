// The canvas's view behaviour as hooks: the refusal line's timeout, fitting a newly opened graph, and palette drops.
import { useReactFlow } from '@xyflow/react';
import { useCallback, useEffect, useState, type DragEvent } from 'react';
import { nodeSpec } from '../../../shared/ir/nodeRegistry.ts';
import { useStore } from './useDesigner.ts';

export const DRAG_MIME = 'application/x-tokenrouter-node';

/** Long enough to read a sentence naming two ports and their types. */
const REFUSAL_MS = 8000;

/** Why the last connection was refused, cleared after REFUSAL_MS; an object, so the same sentence twice restarts its timer. */
export function useRefusal(): [{ text: string } | null, (r: { text: string } | null) => void] {
  const [refusal, setRefusal] = useState<{ text: string } | null>(null);
  useEffect(() => {
    if (!refusal) return;
    const t = setTimeout(() => setRefusal(null), REFUSAL_MS);
    return () => clearTimeout(t);
  }, [refusal]);
  return [refusal, setRefusal];
}

/** Each newly opened document (a new view epoch) is fitted into view. */
export function useFitOnOpen(viewEpoch: number): void {
  const rf = useReactFlow();
  const store = useStore();
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new view epoch is what asks for the fit
  useEffect(() => {
    // An empty document starts at the origin; otherwise wait a frame so its nodes are measured, then fit.
    if (store.getState().graph.nodes.length === 0) {
      void rf.setViewport({ x: 0, y: 0, zoom: 1 });
      return;
    }
    const t = setTimeout(() => void rf.fitView({ padding: 0.2, duration: 250, maxZoom: 1.1 }), 60);
    return () => clearTimeout(t);
  }, [viewEpoch, rf, store]);
}

/** The canvas as the palette's drop target: a dropped node type lands under the pointer. */
export function usePaletteDrop(): { onDragOver(e: DragEvent): void; onDrop(e: DragEvent): void } {
  const rf = useReactFlow();
  const store = useStore();
  const onDragOver = useCallback((e: DragEvent) => {
    if (!e.dataTransfer.types.includes(DRAG_MIME)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
  }, []);
  const onDrop = useCallback(
    (e: DragEvent) => {
      const type = e.dataTransfer.getData(DRAG_MIME);
      if (!type || !nodeSpec(type)) return;
      e.preventDefault();
      const p = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
      store.addNode(type, { x: p.x - 90, y: p.y - 20 });
    },
    [rf, store],
  );
  return { onDragOver, onDrop };
}

// The graph canvas: React Flow driven by the store (controlled nodes and edges), drop target of the palette; says why a connection is refused.
import {
  Background,
  BackgroundVariant,
  Controls,
  MiniMap,
  ReactFlow,
  type Connection,
  type Edge,
  type EdgeChange,
  type NodeChange,
  type OnConnect,
  type OnConnectEnd,
} from '@xyflow/react';
import { useCallback, useMemo } from 'react';
import { AlgoNode, type AlgoFlowNode } from './AlgoNode.tsx';
import { useFitOnOpen, usePaletteDrop, useRefusal } from './canvasHooks.ts';
import { edgeSelection, flowEdges, flowNodes, nodeEdits } from './flowElements.ts';
import { connectionProblem, dragProblem } from './graphEdits.ts';
import { CATEGORY_COLORS } from './theme.ts';
import { useDesigner, useStore } from './useDesigner.ts';

const nodeTypes = { algo: AlgoNode };
export function Canvas() {
  const store = useStore();
  const graph = useDesigner((s) => s.graph);
  const selection = useDesigner((s) => s.selection);
  const issues = useDesigner((s) => s.issues);
  const measured = useDesigner((s) => s.measured);
  const catalog = useDesigner((s) => s.catalog);
  const viewEpoch = useDesigner((s) => s.viewEpoch);
  const [refusal, setRefusal] = useRefusal();
  useFitOnOpen(viewEpoch);
  const drop = usePaletteDrop();

  const nodes = useMemo(() => flowNodes(graph, selection.nodes, measured, issues, catalog), [graph, selection.nodes, measured, issues, catalog]);
  const edges = useMemo(() => flowEdges(graph, selection.edges), [graph, selection.edges]);

  const onNodesChange = useCallback(
    (changes: NodeChange<AlgoFlowNode>[]) => {
      const s = store.getState();
      const edits = nodeEdits(changes, s.graph, s.selection);
      for (const [id, size] of edits.measured) store.setMeasured(id, size);
      if (edits.positions.size) store.moveNodes(edits.positions, edits.dragging);
      if (edits.selected) store.select(edits.selected, store.getState().selection.edges);
    },
    [store],
  );

  const onEdgesChange = useCallback(
    (changes: EdgeChange[]) => {
      const sel = edgeSelection(changes, store.getState().selection);
      if (sel) store.select(store.getState().selection.nodes, sel);
    },
    [store],
  );

  const onConnect = useCallback<OnConnect>(
    (c) => {
      if (c.sourceHandle && c.targetHandle) store.connect({ node: c.source, port: c.sourceHandle }, { node: c.target, port: c.targetHandle });
    },
    [store],
  );

  const isValidConnection = useCallback(
    (c: Connection | Edge) =>
      !!c.sourceHandle &&
      !!c.targetHandle &&
      connectionProblem(store.getState().graph, { node: c.source, port: c.sourceHandle }, { node: c.target, port: c.targetHandle }) === null,
    [store],
  );

  // React Flow only greys an incompatible handle out; a released drag onto one gets the reason in words.
  const onConnectEnd = useCallback<OnConnectEnd>(
    (_, c) => {
      const { fromHandle: a, toHandle: b } = c;
      if (c.isValid !== false || !a?.id || !b?.id) return;
      const text = dragProblem(store.getState().graph, { node: a.nodeId, port: a.id, side: a.type }, { node: b.nodeId, port: b.id, side: b.type });
      if (text) setRefusal({ text });
    },
    [store, setRefusal],
  );

  const onDelete = useCallback(
    ({ nodes: ns, edges: es }: { nodes: AlgoFlowNode[]; edges: Edge[] }) =>
      store.remove(
        ns.map((n) => n.id),
        es.map((e) => e.id),
      ),
    [store],
  );

  return (
    <div className="canvas" data-testid="canvas" onDragOver={drop.onDragOver} onDrop={drop.onDrop}>
      <ReactFlow<AlgoFlowNode, Edge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onConnectStart={() => setRefusal(null)}
        onConnectEnd={onConnectEnd}
        onDelete={onDelete}
        isValidConnection={isValidConnection}
        deleteKeyCode={['Backspace', 'Delete']}
        multiSelectionKeyCode={['Meta', 'Control']}
        colorMode="dark"
        minZoom={0.2}
        maxZoom={2}
        snapToGrid
        snapGrid={[10, 10]}
        proOptions={{ hideAttribution: true }}
        onPaneClick={() => store.select([], [])}
      >
        <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} color="#2a3442" />
        <Controls showInteractive={false} position="bottom-left" />
        <MiniMap
          pannable
          zoomable
          position="bottom-right"
          nodeColor={(n) => CATEGORY_COLORS[(n as AlgoFlowNode).data.spec.category]}
          nodeStrokeColor={(n) => ((n as AlgoFlowNode).data.issues.some((i) => i.severity === 'error') ? '#f4645d' : 'transparent')}
          nodeStrokeWidth={6}
          maskColor="rgba(8, 11, 16, 0.7)"
          bgColor="#10151d"
          style={{ width: 180, height: 120 }}
        />
      </ReactFlow>
      {/* Always mounted, so screen readers announce each new refusal. */}
      <div className="canvas-refusal" role="status" aria-live="polite" data-testid="connect-refusal">
        {refusal?.text}
      </div>
      {graph.nodes.length === 0 && (
        <div className="canvas-empty">
          <div className="canvas-empty-title">Empty canvas</div>
          <div>Drag nodes from the palette, starting with a Start node, or open an example from the Open menu.</div>
        </div>
      )}
    </div>
  );
}

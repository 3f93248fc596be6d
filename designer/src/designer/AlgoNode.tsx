// Canvas rendering of one algorithm node: typed handles per port, a parameter summary, and its validation issues.
import { Handle, Position, type Node, type NodeProps } from '@xyflow/react';
import { memo } from 'react';
import type { IrIssue } from '../../../shared/ir/irIssue.ts';
import { nodeSpec } from '../../../shared/ir/nodeRegistry.ts';
import type { NodeSpec, ParamValue, PortSpec } from '../../../shared/ir/nodeTypes.ts';
import { CATEGORY_COLORS, CATEGORY_SHORT, PORT_COLORS } from './theme.ts';

export interface AlgoNodeData extends Record<string, unknown> {
  /** The node type's spec, or a stand-in for a type the registry does not hold. */
  spec: NodeSpec;
  params: Record<string, ParamValue>;
  issues: IrIssue[];
  connected: ReadonlySet<string>;
  /** Colour of the model the node runs on, when it has one. */
  modelColor: string | null;
}

export type AlgoFlowNode = Node<AlgoNodeData, 'algo'>;

/** One port's handle, coloured by its type; inputs on the left, outputs on the right. */
function PortHandle({ node, port, side }: { node: string; port: PortSpec; side: 'in' | 'out' }) {
  return (
    <Handle
      type={side === 'in' ? 'target' : 'source'}
      position={side === 'in' ? Position.Left : Position.Right}
      id={port.name}
      className={`an-handle t-${port.type}`}
      style={{ background: PORT_COLORS[port.type] }}
      data-testid={`${side}-${node}-${port.name}`}
      title={`${port.label}: ${port.type}${port.optional ? ' (optional)' : ''}`}
    />
  );
}

function AlgoNodeView({ id, data, selected }: NodeProps<AlgoFlowNode>) {
  const { spec, params, issues, connected, modelColor } = data;
  const errors = issues.filter((i) => i.severity === 'error');
  const warnings = issues.filter((i) => i.severity === 'warning');
  const shown = errors[0] ?? (selected ? warnings[0] : undefined);
  const rows = Math.max(spec.inputs.length, spec.outputs.length);
  const state = errors.length ? 'error' : warnings.length ? 'warning' : 'ok';
  return (
    <div
      className={`an an-${state}${selected ? ' an-selected' : ''}`}
      data-testid={`node-${id}`}
      data-node-type={spec.type}
      data-issues={issues.map((i) => i.code).join(' ')}
    >
      <div className="an-head" style={{ borderTopColor: CATEGORY_COLORS[spec.category] }}>
        {!spec.label.toLowerCase().startsWith(CATEGORY_SHORT[spec.category]) && (
          <span className="an-cat" style={{ color: CATEGORY_COLORS[spec.category] }}>
            {CATEGORY_SHORT[spec.category]}
          </span>
        )}
        <span className="an-title">{spec.label}</span>
        {modelColor && <span className="an-model" style={{ background: modelColor }} title={`runs on ${String(params.model)}`} />}
        {warnings.length > 0 && !errors.length && (
          <span className="an-warnicon" title={warnings.map((w) => `${w.code}: ${w.message}`).join('\n')}>
            !
          </span>
        )}
      </div>
      <div className="an-sub" title={spec.description}>
        <span className="an-id">{id}</span> {nodeSpec(spec.type)?.summary(params, connected)}
      </div>
      {rows > 0 && (
        <div className="an-ports">
          {Array.from({ length: rows }, (_, i) => {
            const inp = spec.inputs[i];
            const out = spec.outputs[i];
            return (
              <div className="an-row" key={i}>
                <div className="an-in">
                  {inp && (
                    <>
                      <PortHandle node={id} port={inp} side="in" />
                      <span className={inp.optional ? 'an-opt' : ''}>{inp.label}</span>
                    </>
                  )}
                </div>
                <div className="an-out">
                  {out && (
                    <>
                      <span>{out.label}</span>
                      <PortHandle node={id} port={out} side="out" />
                    </>
                  )}
                </div>
              </div>
            );
          })}
        </div>
      )}
      {shown && (
        <div className={`an-issue an-issue-${shown.severity}`} data-testid={`issue-${id}`}>
          <div>
            <code>{shown.code}</code>
            {issues.length > 1 && <span className="an-more"> +{issues.length - 1}</span>}
          </div>
          <div className="an-fix">{shown.fix}</div>
        </div>
      )}
    </div>
  );
}

export const AlgoNode = memo(AlgoNodeView);

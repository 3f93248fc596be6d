// Building blocks the node type modules share: common ports and parameters, signal reads, and number formatting for summaries.
import { LIMITS, type ParamSpec, type ParamValue, type PortSpec } from '../nodeTypes.ts';
import type { Params, SignalDef, SignalField } from '../nodeTypeDef.ts';

export const modelParam = (label = 'Model', def = 'small', help?: string): ParamSpec => ({ kind: 'model', name: 'model', label, default: def, help });
export const priority: ParamSpec = {
  kind: 'int',
  name: 'priority',
  label: 'Priority',
  min: 0,
  max: 99,
  default: 10,
  help: 'Lower runs first; the first decision that fires wins.',
};
export const value = (label: string, def: number, replacedBy?: string): ParamSpec => ({
  kind: 'number',
  name: 'value',
  label,
  min: -LIMITS.maxAbsValue,
  max: LIMITS.maxAbsValue,
  default: def,
  replacedBy,
});
export const when: PortSpec = { name: 'when', type: 'boolean', label: 'when', optional: true };
export const num = (name: string, label = name, optional = false): PortSpec => ({ name, type: 'number', label, optional });
export const bool = (name: string, label = name, optional = false): PortSpec => ({ name, type: 'boolean', label, optional });

/** A number as a summary shows it: at most six significant digits. */
export const fmt = (v: ParamValue | undefined): string => (typeof v === 'number' ? String(Number(v.toPrecision(6))) : String(v));

/** "on <model>": the summary of a node whose only setting worth showing is its model. */
export const onModel = (p: Params): string => `on ${p.model}`;

/** A signal read on the model `model`, with any extra parameters. */
export function signal(
  def: Omit<SignalDef, 'category' | 'inputs' | 'outputs' | 'params' | 'summary'> & {
    out?: PortSpec;
    extra?: readonly ParamSpec[];
    summary?: SignalDef['summary'];
  },
): SignalDef {
  const { out, extra = [], summary = onModel, ...rest } = def;
  return {
    ...rest,
    category: 'signal',
    inputs: [],
    outputs: [out ?? num('out', def.label.toLowerCase())],
    params: [modelParam('On model', 'small', 'Read this signal when the request is on this model.'), ...extra],
    summary,
  };
}

/** A signal that reads one RouteInput field. */
export function fieldSignal(type: string, label: string, description: string, field: SignalField = type as SignalField, out?: PortSpec): SignalDef {
  return signal({ type, label, description, out, read: () => ({ field, head: '' }) });
}

/** "a <op> b" of a binary operator whose b falls back to its Value parameter. */
export const binarySummary = (p: Params, connected: ReadonlySet<string>): string => `a ${p.op} ${connected.has('b') ? 'b' : fmt(p.value)}`;

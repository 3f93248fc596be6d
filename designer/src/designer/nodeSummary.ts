// One-line summaries of a node's parameters, shown under its title on the canvas.
import type { ParamValue } from '../../../shared/ir/nodeTypes.ts';

const num = (v: ParamValue | undefined): string => (typeof v === 'number' ? String(Number(v.toPrecision(6))) : String(v));

export function nodeSummary(type: string, p: Readonly<Record<string, ParamValue>>, connected: ReadonlySet<string>): string {
  switch (type) {
    case 'start':
      return `entry · ${p.model}`;
    case 'head':
      return `${p.head} · ${p.model}`;
    case 'distribution':
      return `top-${p.topK} · ${p.model}`;
    case 'constant':
    case 'flag':
      return num(p.value);
    case 'compare':
      return `a ${p.op} ${connected.has('b') ? 'b' : num(p.value)}`;
    case 'arith':
      return `a ${p.op} ${connected.has('b') ? 'b' : num(p.value)}`;
    case 'minMax':
      return `${p.op}(a, b)`;
    case 'tokenMatch': {
      const ids = (p.ids as number[]) ?? [];
      const parts = [ids.length ? `ids ${ids.slice(0, 4).join(',')}${ids.length > 4 ? '…' : ''}` : '', p.text ? `“${p.text}”` : ''].filter(Boolean);
      return parts.join(' or ') || 'matches nothing';
    }
    case 'topKMass':
      return `k = ${p.k}`;
    case 'counter':
      return `from ${num(p.value)}, step ${num(p.step)}`;
    case 'movingAverage':
      return `α ${num(p.alpha)}, from ${num(p.value)}`;
    case 'stay':
      return `on ${p.model} · p${p.priority}`;
    case 'handoff':
      return `${p.model} → ${p.to} · ${p.keep ? 'keep' : 'discard'} · p${p.priority}`;
    case 'handBack':
      return `${p.model} → ${p.to} after ${p.after} · p${p.priority}`;
    case 'drawModel': {
      const w = (p.weights ?? {}) as Record<string, number>;
      return `on ${p.model} · ${Object.entries(w)
        .filter(([, x]) => x > 0)
        .map(([m, x]) => `${m} ${num(x)}`)
        .join(' · ')}`;
    }
    case 'receiveAccept':
      return `on ${p.model}`;
    case 'receiveCommit': {
      const r = (p.reset as string[]) ?? [];
      return `on ${p.model}${r.length ? ` · reset ${r.join(', ')}` : ''}`;
    }
    default:
      return typeof p.model === 'string' ? `on ${p.model}` : '';
  }
}

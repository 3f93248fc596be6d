// Where one thread's CPU went, from a V8 .cpuprofile (`node --cpu-prof` writes one per thread): the model's share on-CPU, not in wall time.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileShares {
  /** Samples in the window (the thread on a CPU in JS, native code or GC; idle samples are left out). */
  busySamples: number;
  /** Seconds from the profile's start: each one's busy share, to find the window a run measured. */
  timeline: { second: number; busy: number }[];
  /** Share of busy samples inside onnxruntime's `run` (the model, router heads included): native inference on this thread. */
  model: number;
  gc: number;
  /** Functions by self samples, best first. */
  top: { name: string; share: number }[];
}

/** onnxruntime-node's session handler calls the native run from backend.js: every sample under it is inference. */
const isModelFrame = (f: CallFrame) => f.url.endsWith('onnxruntime-node/dist/backend.js');

/** Shares of the busy samples between `fromS` and `toS` seconds after the profile's start. */
export function profileShares(p: CpuProfile, fromS = 0, toS = Infinity, topN = 15): ProfileShares {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const underModel = new Map<number, boolean>();
  const inModel = (id: number): boolean => {
    const known = underModel.get(id);
    if (known !== undefined) return known;
    const n = byId.get(id)!;
    const up = parent.get(id);
    const v = isModelFrame(n.callFrame) || (up !== undefined && inModel(up));
    underModel.set(id, v);
    return v;
  };
  let t = p.startTime;
  let busy = 0;
  let model = 0;
  let gc = 0;
  const self = new Map<string, number>();
  const perSecond = new Map<number, { all: number; busy: number }>();
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    const s = (t - p.startTime) / 1e6;
    const n = byId.get(p.samples[i])!;
    const idle = n.callFrame.functionName === '(idle)';
    const sec = perSecond.get(Math.floor(s)) ?? { all: 0, busy: 0 };
    sec.all++;
    if (!idle) sec.busy++;
    perSecond.set(Math.floor(s), sec);
    if (idle || s < fromS || s >= toS) continue;
    busy++;
    if (inModel(n.id)) model++;
    if (n.callFrame.functionName === '(garbage collector)') gc++;
    const name = `${n.callFrame.functionName || '(anonymous)'} ${basename(n.callFrame.url)}`.trim();
    self.set(name, (self.get(name) ?? 0) + 1);
  }
  const share = (x: number) => (busy > 0 ? x / busy : 0);
  return {
    busySamples: busy,
    timeline: [...perSecond].sort((a, b) => a[0] - b[0]).map(([second, v]) => ({ second, busy: v.busy / v.all })),
    model: share(model),
    gc: share(gc),
    top: [...self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([name, v]) => ({ name, share: share(v) })),
  };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      from: { type: 'string', default: '0' },
      to: { type: 'string' },
      top: { type: 'string', default: '15' },
      'min-busy': { type: 'string', default: '1000' },
    },
  });
  if (positionals.length === 0) {
    console.error('usage: tsx test/bench/profileShares.ts PROFILE.cpuprofile… [--from S] [--to S] [--top N] [--min-busy SAMPLES]');
    process.exit(2);
  }
  const from = Number(values.from);
  const to = values.to === undefined ? Infinity : Number(values.to);
  for (const file of positionals) {
    const r = profileShares(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, from, to, Number(values.top));
    // a profile per thread: the idle ones (loader hooks, spare workers) say nothing
    if (r.busySamples < Number(values['min-busy'])) continue;
    const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
    console.log(`${basename(file)}: ${r.busySamples} busy samples; model (onnxruntime run) ${pct(r.model)}, GC ${pct(r.gc)}`);
    console.log(`  busy per second: ${r.timeline.map((x) => `${x.second}:${Math.round(100 * x.busy)}`).join(' ')}`);
    for (const f of r.top) console.log(`  ${pct(f.share).padStart(6)}  ${f.name}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();

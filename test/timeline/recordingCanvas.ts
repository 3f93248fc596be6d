// A stand-in 2D canvas for Node tests: records every state change and draw call in order, so a painter's output can be compared without a DOM.

/** One recorded operation: its name and arguments (paths are inlined as their own command lists). */
export type DrawOp = [string, ...unknown[]];

/** Path2D stand-in: keeps its commands so that stroke(path) / fill(path) can record what the path held. */
export class RecordingPath {
  ops: DrawOp[] = [];
  moveTo(x: number, y: number): void {
    this.ops.push(['M', x, y]);
  }
  lineTo(x: number, y: number): void {
    this.ops.push(['L', x, y]);
  }
  closePath(): void {
    this.ops.push(['Z']);
  }
}

/** Text is measured as 6 px per character: deterministic, so ellipsis decisions show in the list. */
export const CHAR_W = 6;

const STATE = ['fillStyle', 'strokeStyle', 'lineWidth', 'font', 'textAlign', 'textBaseline', 'globalAlpha'] as const;
type StateKey = (typeof STATE)[number];

export class RecordingContext {
  ops: DrawOp[] = [];
  private state: Record<StateKey, string | number> = {
    fillStyle: '#000000',
    strokeStyle: '#000000',
    lineWidth: 1,
    font: '10px sans-serif',
    textAlign: 'start',
    textBaseline: 'alphabetic',
    globalAlpha: 1,
  };
  private stack: Record<StateKey, string | number>[] = [];
  private dash: number[] = [];

  get fillStyle(): string {
    return String(this.state.fillStyle);
  }
  set fillStyle(v: string) {
    this.set('fillStyle', v);
  }
  get strokeStyle(): string {
    return String(this.state.strokeStyle);
  }
  set strokeStyle(v: string) {
    this.set('strokeStyle', v);
  }
  get lineWidth(): number {
    return Number(this.state.lineWidth);
  }
  set lineWidth(v: number) {
    this.set('lineWidth', v);
  }
  get font(): string {
    return String(this.state.font);
  }
  set font(v: string) {
    this.set('font', v);
  }
  get textAlign(): string {
    return String(this.state.textAlign);
  }
  set textAlign(v: string) {
    this.set('textAlign', v);
  }
  get textBaseline(): string {
    return String(this.state.textBaseline);
  }
  set textBaseline(v: string) {
    this.set('textBaseline', v);
  }
  get globalAlpha(): number {
    return Number(this.state.globalAlpha);
  }
  set globalAlpha(v: number) {
    this.set('globalAlpha', v);
  }

  private set(k: StateKey, v: string | number): void {
    this.state[k] = v;
    this.ops.push(['set', k, v]);
  }

  fillRect(x: number, y: number, w: number, h: number): void {
    this.ops.push(['fillRect', x, y, w, h]);
  }
  strokeRect(x: number, y: number, w: number, h: number): void {
    this.ops.push(['strokeRect', x, y, w, h]);
  }
  fillText(s: string, x: number, y: number): void {
    this.ops.push(['fillText', s, x, y]);
  }
  measureText(s: string): { width: number } {
    return { width: s.length * CHAR_W };
  }
  beginPath(): void {
    this.ops.push(['beginPath']);
  }
  moveTo(x: number, y: number): void {
    this.ops.push(['moveTo', x, y]);
  }
  lineTo(x: number, y: number): void {
    this.ops.push(['lineTo', x, y]);
  }
  rect(x: number, y: number, w: number, h: number): void {
    this.ops.push(['rect', x, y, w, h]);
  }
  arc(x: number, y: number, r: number, a0: number, a1: number): void {
    this.ops.push(['arc', x, y, r, a0, a1]);
  }
  clip(): void {
    this.ops.push(['clip']);
  }
  stroke(path?: RecordingPath): void {
    this.ops.push(path ? ['strokePath', path.ops] : ['stroke']);
  }
  fill(path?: RecordingPath): void {
    this.ops.push(path ? ['fillPath', path.ops] : ['fill']);
  }
  setLineDash(d: number[]): void {
    this.dash = d.slice();
    this.ops.push(['setLineDash', this.dash]);
  }
  getLineDash(): number[] {
    return this.dash.slice();
  }
  save(): void {
    this.stack.push({ ...this.state });
    this.ops.push(['save']);
  }
  restore(): void {
    const s = this.stack.pop();
    if (s) this.state = s;
    this.ops.push(['restore']);
  }

  /** The ops of one kind, e.g. every fillRect. */
  calls(name: string): DrawOp[] {
    return this.ops.filter((op) => op[0] === name);
  }
  /** Each fillRect with the fillStyle and globalAlpha in force when it was drawn. */
  rects(): { x: number; y: number; w: number; h: number; color: string; alpha: number }[] {
    return this.withState('fillRect').map(({ op, s }) => ({
      x: op[1] as number,
      y: op[2] as number,
      w: op[3] as number,
      h: op[4] as number,
      color: String(s.fillStyle),
      alpha: Number(s.globalAlpha),
    }));
  }
  /** Each fillText with its colour and font. */
  texts(): { text: string; x: number; y: number; color: string; font: string; align: string }[] {
    return this.withState('fillText').map(({ op, s }) => ({
      text: op[1] as string,
      x: op[2] as number,
      y: op[3] as number,
      color: String(s.fillStyle),
      font: String(s.font),
      align: String(s.textAlign),
    }));
  }
  /** Replays the state changes to pair each op of `name` with the state in force at it. */
  withState(name: string): { op: DrawOp; s: Record<StateKey, string | number>; dash: number[] }[] {
    const s: Record<StateKey, string | number> = {
      fillStyle: '#000000',
      strokeStyle: '#000000',
      lineWidth: 1,
      font: '10px sans-serif',
      textAlign: 'start',
      textBaseline: 'alphabetic',
      globalAlpha: 1,
    };
    const stack: Record<StateKey, string | number>[] = [];
    let dash: number[] = [];
    const out: { op: DrawOp; s: Record<StateKey, string | number>; dash: number[] }[] = [];
    for (const op of this.ops) {
      if (op[0] === 'set') s[op[1] as StateKey] = op[2] as string | number;
      else if (op[0] === 'save') stack.push({ ...s });
      else if (op[0] === 'restore') Object.assign(s, stack.pop());
      else if (op[0] === 'setLineDash') dash = op[1] as number[];
      else if (op[0] === name) out.push({ op, s: { ...s }, dash });
    }
    return out;
  }
}

/** Installs RecordingPath as the global Path2D the painter creates paths with (Node has none). */
export function installPath2D(): void {
  (globalThis as unknown as { Path2D: unknown }).Path2D = RecordingPath;
}

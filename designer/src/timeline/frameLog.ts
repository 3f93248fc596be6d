// The last frames' intervals and draw times (ring buffers), and an unbounded recording between start and stop.

const SIZE = 600;

export interface FrameTimes {
  deltas: number[];
  draws: number[];
}

export class FrameLog {
  private readonly deltas = new Float64Array(SIZE);
  private readonly draws = new Float64Array(SIZE);
  private frames = 0;
  private drawn = 0;
  private recording: FrameTimes | null = null;

  frame(deltaMs: number): void {
    this.deltas[this.frames++ % SIZE] = deltaMs;
    this.recording?.deltas.push(deltaMs);
  }

  draw(ms: number): void {
    this.draws[this.drawn++ % SIZE] = ms;
    this.recording?.draws.push(ms);
  }

  /** The last (up to) 600 of each, oldest first. */
  recent(): FrameTimes {
    const take = (a: Float64Array, n: number): number[] => {
      const out: number[] = [];
      for (let i = n - Math.min(n, SIZE); i < n; i++) out.push(a[i % SIZE]);
      return out;
    };
    return { deltas: take(this.deltas, this.frames), draws: take(this.draws, this.drawn) };
  }

  startRecording(): void {
    this.recording = { deltas: [], draws: [] };
  }

  stopRecording(): FrameTimes {
    const r = this.recording ?? { deltas: [], draws: [] };
    this.recording = null;
    return r;
  }
}

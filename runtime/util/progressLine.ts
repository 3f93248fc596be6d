// Progress on stderr: redrawn in place on a terminal, whole newline-terminated lines anywhere else.

/** The part of a stream the printer needs (process.stderr, or a fake in tests). */
export interface ProgressStream {
  isTTY?: boolean;
  write(chunk: string): unknown;
}

/**
 * Prints `text` for step `done` of `total`. On a terminal the line is redrawn with `\r`; piped to a
 * file or a CI log a `\r` does not return to the line start, so updates would run together
 * (`3/64 requests6/64 requests…`): there each update is a line of its own, at most one per tenth of
 * the way plus the last, so a long run does not flood the log.
 */
export class ProgressLine {
  private lastText = '';
  private lastTenth = -1;
  private lastLabel = '';
  private open = false;

  constructor(private readonly stream: ProgressStream = process.stderr) {}

  update(text: string, done: number, total: number): void {
    const finished = done >= total;
    if (this.stream.isTTY) {
      // Padding wipes the tail of a longer previous line.
      this.stream.write(`\r${text}${' '.repeat(Math.max(0, this.lastText.length - text.length))}`);
      this.lastText = text;
      this.open = !finished;
      if (finished) {
        this.stream.write('\n');
        this.lastText = '';
      }
      return;
    }
    const tenth = total > 0 ? Math.floor((done / total) * 10) : 10;
    // A new label (a new stage) always prints; the same label prints once per tenth.
    const label = text.replace(/\d+/g, '#');
    if (!finished && tenth === this.lastTenth && label === this.lastLabel) return;
    this.lastTenth = finished ? -1 : tenth;
    this.lastLabel = finished ? '' : label;
    this.stream.write(`${text}\n`);
  }

  /** Ends a redrawn line that stopped before its total (an error, a break). */
  end(): void {
    if (this.open) this.stream.write('\n');
    this.open = false;
    this.lastText = '';
  }
}

const shared = new ProgressLine();

/** `done/total text` on stderr through one shared printer (one progress display at a time per process). */
export function progressLine(text: string, done: number, total: number): void {
  shared.update(text, done, total);
}

/** Ends the shared printer's open line, if any. */
export function endProgressLine(): void {
  shared.end();
}

/** Progress on stderr: a redrawn bar on a terminal, whole lines "done/total label" in a log. */
export function progress(label: string, done: number, total: number): void {
  const width = 24;
  const fill = Math.max(0, Math.min(width, Math.round((done / total) * width)));
  const bar = process.stderr.isTTY ? `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ` : '';
  progressLine(`${bar}${done}/${total} ${label}`, done, total);
}

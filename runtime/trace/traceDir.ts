// A folder of JSON-lines trace files, one per run, for commands that run many servers or clusters in turn.
import fs from 'node:fs';
import path from 'node:path';
import { JsonlTraceWriter } from './jsonlWriter.ts';

/**
 * Each run gets its own file, numbered in run order (`03-r2r-tokenrouter.jsonl`): every run's clock
 * starts at 0, so one file per run is what the timeline can show as it happened.
 */
export class TraceDir {
  private n = 0;
  readonly files: string[] = [];

  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }

  open(label: string): JsonlTraceWriter {
    const safe = label.replace(/[^A-Za-z0-9._=-]+/g, '_').replace(/^_+|_+$/g, '') || 'run';
    const file = path.join(this.dir, `${String(++this.n).padStart(2, '0')}-${safe}.jsonl`);
    this.files.push(file);
    return new JsonlTraceWriter(file);
  }
}

// The V8 flags a server process runs with (`npm start`, `npm run bench`, the `tokenrouter` bin, spawned sub-servers).

/**
 * `--single-threaded-gc`: V8 collects on the thread that allocates, with no helper threads. Every
 * model step returns its KV cache in fresh ArrayBuffers (ONNX Runtime's Node binding), so each engine
 * thread is forced into a young collection every ~25 ms; with parallel GC each one wakes helper
 * threads that take cores from the model threads. On this 2-core machine (4 Dec, `offline --models
 * small --ignore-eos true`, alternating) it cut the server's other threads from 13–22 to 1–6 µs of
 * CPU per token and the engine's GC from 5–9 % to 4 % of its CPU (docs/benchmarks.md).
 * V8 reads it only at start-up (v8.setFlagsFromString later aborts the process), so it sits on the
 * command line: package.json's scripts and the bin's first line carry the same list (a test checks).
 */
export const SERVER_NODE_FLAGS = ['--single-threaded-gc'] as const;

/** How this process collects garbage, for a report's settings. */
export function gcMode(): 'single-threaded' | 'parallel' {
  return process.execArgv.includes('--single-threaded-gc') ? 'single-threaded' : 'parallel';
}

/** Started without the flags on a small machine (a user's own `node` command line): what it costs and how to add them. */
export function gcHint(cores: number): string | undefined {
  if (gcMode() === 'single-threaded' || cores > 2) return undefined;
  return `note: V8 runs with parallel GC helper threads on this ${cores}-core machine; start with \`node ${SERVER_NODE_FLAGS.join(' ')} …\` (npm start and the tokenrouter bin do) to leave the cores to the models`;
}

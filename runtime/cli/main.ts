// The tokenrouter CLI: serve | models | bench | eval | calibrate | subserver | optimize | simulate.
import { TokenRouterError } from '../errors.ts';
import { ModelFolderError } from '../runner/modelFolder.ts';

type Command = { summary: string; usage: string; run: (args: string[]) => Promise<number> };

const COMMANDS: Record<string, Command> = {
  serve: {
    summary: 'run the server: OpenAI API, designer at /, timeline at /timeline',
    usage:
      'tokenrouter serve [--config FILE] [--port N] [--host ADDR] [--api-key KEY]...\n  PORT in the environment also sets the port; --port wins.\n  --api-key (repeatable), TOKENROUTER_API_KEY (comma-separated) and "apiKeys" in the config add keys; with any, /v1 needs Authorization: Bearer KEY.',
    run: async (args) => (await import('./serveCommand.ts')).serveCommand(args),
  },
  models: {
    summary: 'list the model folders and check their files: the ONNX file, dtype, vocabulary and EOS ids each will use',
    usage:
      'tokenrouter models [--dir DIR]   (default examples/models)\n       tokenrouter models --config FILE   (the models a server config names, with their dtype)',
    run: async (args) => (await import('./modelsCommand.ts')).modelsCommand(args),
  },
  bench: {
    summary: 'load a running server (bench serve), or run a benchmark suite from a checkout (same as npm run bench -- <suite>)',
    usage:
      'tokenrouter bench serve --url URL --model NAME [...]   (the load generator against any server; bench serve --help)\n' +
      '       tokenrouter bench <suite> [--json FILE] [--trace DIR]   (--trace: serving suites write one trace per server run)',
    // The suites live in test/bench (the one product import of test/, allowed in .dependency-cruiser.cjs); serve is product code.
    run: async (args) =>
      args[0] === 'serve' ? (await import('../loadgen/cli.ts')).main(args.slice(1)) : (await import('../../test/bench/main.ts')).main(args),
  },
  eval: {
    summary: "accuracy vs throughput of every algorithm and baseline on a task's validation or held-out problems",
    usage:
      'tokenrouter eval [--task word-problems|multiplication|PATH (default word-problems; multiplication reads the split files in --models; PATH: a task folder, docs/api.md)] [--split heldout|validation] [--problems N (default: the whole split)] [--concurrency 8] [--max-tokens 128] [--models DIR (small, large, medium folders; default examples/models)] [--plan default|ensemble|heads] [--choose FILE] [--only NAME,...] [--json FILE] [--out results/eval] [--trace DIR]',
    run: async (args) => (await import('./evalCommand.ts')).evalCommand(args),
  },
  calibrate: {
    summary: "choose a built-in's threshold for a target share of tokens on the large model, on a running server",
    usage:
      'tokenrouter calibrate --target SHARE [--algorithm r-stitch|citer|r2r|co-llm] [--model large] [--task NAME|PATH (default word-problems)] [--problems 16] [--iterations 7] [--url http://127.0.0.1:8080] [--token T | --data-dir DIR]\n' +
      '  Each trial runs the first N validation problems on the served models (POST /admin/calibrate). Thresholds are per model pair.\n' +
      '  The admin token (when the server needs one): --token, TOKENROUTER_ADMIN_TOKEN, or DIR/admin-token.',
    run: async (args) => (await import('./calibrateCommand.ts')).calibrateCommand(args),
  },
  subserver: {
    summary: 'run one model as a remote sub-server for an entry, over NATS',
    usage: 'tokenrouter subserver --model NAME --nats nats://HOST:PORT [--token T] [--replica ID] [--models-dir DIR] [--sim]  (see docs/deploy.md)',
    run: async (args) => (await import('./subserverCommand.ts')).subserverCommand(args),
  },
  optimize: {
    summary: 'delayed-batching thresholds for a recorded trace, with the predicted gain over thresholds of 1',
    usage:
      'tokenrouter optimize --trace FILE.jsonl [--concurrency N] [--max-batch B] [--fixed small=1] [--profile examples/models] [--slo tpot:MS[,ttft:MS]] [--request-rate R] [--json FILE]\n' +
      "  P and C come from the trace; step latency from its batches, or with --profile from timing each model's real runner.",
    run: async (args) => (await import('./optimizeCommand.ts')).optimizeCommand(args),
  },
  simulate: {
    summary: 'simulate a routing workload, or replay a recorded trace, in virtual time; optionally write its trace',
    usage:
      'tokenrouter simulate [--mode async-delayed] [--concurrency 16] [--requests 64] [--p 0.35] [--thresholds small=1,large=4] [--retain true] [--tokens 512] [--trace FILE.jsonl]\n' +
      '       tokenrouter simulate --replay RECORDED.jsonl [--mode M] [--thresholds ...] [--retain true] [--concurrency N] [--trace FILE.jsonl]\n' +
      "  --replay re-runs a recorded trace's requests (same tokens, models and hand-offs; step cost fitted from its batches) under another setup.",
    run: async (args) => (await import('./simulateCommand.ts')).simulateCommand(args),
  },
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    console.log('usage: tokenrouter <command> [options]\n');
    for (const [name, c] of Object.entries(COMMANDS)) console.log(`  ${name.padEnd(10)} ${c.summary}`);
    console.log('\nRun `tokenrouter <command> --help` for its options.');
    return cmd ? 0 : 2;
  }
  const c = COMMANDS[cmd];
  if (!c) {
    console.error(`unknown command "${cmd}". Commands: ${Object.keys(COMMANDS).join(', ')}`);
    return 2;
  }
  // bench lists its suites itself
  if (cmd !== 'bench' && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(`${c.summary}\n\nusage: ${c.usage}`);
    return 0;
  }
  try {
    return await c.run(rest);
  } catch (e) {
    // What a user got wrong (a flag, the config, a model folder, a busy port) is one line, not a stack.
    if (e instanceof TokenRouterError) {
      console.error(`error: ${e.message}`);
      return e.code === 'invalid_request' ? 2 : 1;
    }
    if (e instanceof ModelFolderError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}

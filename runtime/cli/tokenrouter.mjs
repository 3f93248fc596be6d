#!/usr/bin/env -S node --single-threaded-gc
// `tokenrouter` bin: registers the TypeScript loader, then runs the CLI (its first line holds SERVER_NODE_FLAGS, runtime/cli/nodeFlags.ts).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
process.exitCode = await main(process.argv.slice(2));

// Child process for the registry crash test: deploys, activates and rolls back in a tight loop until it is killed -9.
import type { AlgorithmSpec } from '../../shared/api/admin.ts';
import { AlgorithmRegistry } from '../../runtime/registry/algorithmRegistry.ts';
import { expectedSpec, NAMES } from './registrySpecs.ts';

const [dataDir, seedText] = process.argv.slice(2);
const registry = new AlgorithmRegistry(dataDir);
let seed = Number(seedText) >>> 0;
const rand = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
// Announce each change only after its transaction returned: the parent checks every announced one survived.
// (stdout to a pipe is synchronous on Linux, so the parent sees lines in the order of the writes.)
for (;;) {
  const name = NAMES[Math.floor(rand() * NAMES.length)];
  const roll = rand();
  if (roll < 0.7) {
    const next = (registry.versions(name).at(-1)?.version ?? 0) + 1;
    const spec: AlgorithmSpec = expectedSpec(name, next);
    // Written before the transaction starts: a kill after this line and before "created" lands inside it.
    process.stdout.write(`begin ${name} ${next}\n`);
    const v = registry.createVersion(name, spec, { activate: rand() < 0.5 });
    process.stdout.write(`created ${name} ${v.version}\n`);
  } else if (roll < 0.9) {
    const versions = registry.versions(name);
    if (versions.length === 0) continue;
    const v = versions[Math.floor(rand() * versions.length)].version;
    registry.activate(name, v);
    process.stdout.write(`activated ${name} ${v}\n`);
  } else {
    try {
      const v = registry.rollback(name);
      process.stdout.write(`rolledback ${name} ${v}\n`);
    } catch {
      // no earlier active version yet
    }
  }
}

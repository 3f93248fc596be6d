// `npm run fixtures -- <name[:variant]...>`: builds real-shape model folders into the cache, printing progress and sizes.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { REAL_SHAPE_CACHE, realShapeFolder } from './realShapeFolder.ts';
import { REAL_SHAPE_SIZES } from './realShapeSizes.ts';
import { REAL_SHAPE_VARIANTS } from './writeRealShapeFolder.ts';

const USAGE = `usage: npm run fixtures -- [--rebuild] [--cache DIR] <name[:variant]> ...
  names:    ${Object.keys(REAL_SHAPE_SIZES).join(', ')}
  variants: ${REAL_SHAPE_VARIANTS.join(', ')} (none: the plain fp32 folder)
  e.g. npm run fixtures -- qwen3-tiny llama3-tiny qwen3-42m:external qwen3-141m:quantized`;

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rebuild: { type: 'boolean' }, cache: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
});
if (values.help || positionals.length === 0) {
  console.log(USAGE);
  process.exit(values.help ? 0 : 2);
}
const cacheDir = values.cache ?? REAL_SHAPE_CACHE;
for (const arg of positionals) {
  const [name, variant] = arg.split(':');
  if (!REAL_SHAPE_SIZES[name]) {
    console.error(`unknown model "${name}"\n${USAGE}`);
    process.exit(2);
  }
  if (variant !== undefined && !(REAL_SHAPE_VARIANTS as readonly string[]).includes(variant)) {
    console.error(`unknown variant "${variant}"\n${USAGE}`);
    process.exit(2);
  }
  const label = variant ? `${name}-${variant}` : name;
  if (values.rebuild) fs.rmSync(path.join(cacheDir, label), { recursive: true, force: true });
  const t0 = performance.now();
  console.log(`${label}: building…`);
  const f = realShapeFolder(name, variant, {
    cacheDir,
    onFile: (w) => console.log(`  ${w.file.padEnd(28)} ${mib(w.bytes).padStart(11)}  ${(w.ms / 1000).toFixed(2)} s`),
  });
  const total = f.files.reduce((a, w) => a + w.bytes, 0);
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  console.log(`${label}: ${f.built ? `built in ${secs} s` : 'already in the cache'}; ${(f.params / 1e6).toFixed(1)} M parameters, ${mib(total)} in ${f.dir}`);
}

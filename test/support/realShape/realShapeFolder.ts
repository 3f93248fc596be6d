// A real-shape model folder from the cache (.cache/real-shape/<name>[-variant]/), built once: in a temporary folder, then renamed into place.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { realShapeSize } from './realShapeSizes.ts';
import { checkVariant, writeRealShapeFolder, type WrittenFile, type WrittenFolder } from './writeRealShapeFolder.ts';

/** Bumped whenever what the builder writes changes: a cached folder with another stamp is built again. */
export const REAL_SHAPE_BUILDER_VERSION = 1;

const STAMP = 'real-shape.stamp.json';

/** The repository's .cache/real-shape (git-ignored). */
export const REAL_SHAPE_CACHE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../.cache/real-shape');

export interface RealShapeFolderOptions {
  cacheDir?: string;
  /** Hears of each file as a build writes it (nothing when the cache already holds the folder). */
  onFile?: (f: WrittenFile) => void;
}

interface Stamp {
  builder: number;
  name: string;
  variant: string | null;
  params: number;
  files: WrittenFile[];
}

function readStamp(dir: string): Stamp | undefined {
  try {
    const s = JSON.parse(fs.readFileSync(path.join(dir, STAMP), 'utf8')) as Stamp;
    return s.builder === REAL_SHAPE_BUILDER_VERSION ? s : undefined;
  } catch {
    return undefined;
  }
}

export interface RealShapeFolder extends WrittenFolder {
  /** False: the cache held it already. */
  built: boolean;
}

/**
 * The folder of model `name` (REAL_SHAPE_SIZES) in `variant` (REAL_SHAPE_VARIANTS), built if the
 * cache lacks it or holds another builder version's. Safe when several processes ask at once:
 * each builds in its own temporary folder and the first rename wins.
 */
export function realShapeFolder(name: string, variant?: string, opts: RealShapeFolderOptions = {}): RealShapeFolder {
  const size = realShapeSize(name);
  const v = checkVariant(variant);
  const root = path.resolve(opts.cacheDir ?? REAL_SHAPE_CACHE);
  const dir = path.join(root, v ? `${name}-${v}` : name);
  const have = readStamp(dir);
  if (have) return { dir, params: have.params, files: have.files, built: false };
  fs.mkdirSync(root, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(root, `.tmp-${path.basename(dir)}-`));
  const out = path.join(tmp, path.basename(dir));
  try {
    const w = writeRealShapeFolder(out, size, { variant: v, onFile: opts.onFile });
    const stamp: Stamp = { builder: REAL_SHAPE_BUILDER_VERSION, name, variant: v ?? null, params: w.params, files: w.files };
    fs.writeFileSync(path.join(out, STAMP), `${JSON.stringify(stamp, null, 2)}\n`);
    // an older build (other stamp) makes way; a folder another process just finished is kept
    if (fs.existsSync(dir) && !readStamp(dir)) fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(out, dir);
    } catch (e) {
      if (!readStamp(dir)) throw e;
      return { dir, params: w.params, files: w.files, built: false };
    }
    return { dir, params: w.params, files: w.files, built: true };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

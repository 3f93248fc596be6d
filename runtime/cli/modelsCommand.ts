// `tokenrouter models`: each model folder with the file, dtype, vocabulary and EOS ids a runner will use, from a directory or a server config.
import path from 'node:path';
import { loadServerConfig } from '../config/serverConfig.ts';
import { listModelFolders, modelFolderStatus, type ModelFolderStatus } from '../runner/modelFolder.ts';
import { parseFlags } from '../util/cliFlags.ts';

export function describeStatus(s: ModelFolderStatus): string {
  if (!s.ok) return `BAD  ${s.name.padEnd(10)} ${s.error}`;
  const data = s.externalData && s.externalData.length > 0 ? ` + ${s.externalData.join(', ')}` : '';
  const mib = ((s.onnxBytes ?? 0) / 2 ** 20).toFixed(1);
  return `ok   ${s.name.padEnd(10)} ${s.file}${data} (dtype ${s.dtype}, ${mib} MiB)  vocab ${s.params!.vocab}  eos ${s.eosTokenIds!.join(', ')}  ${s.dir}`;
}

export async function modelsCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({ args, options: { dir: { type: 'string' }, config: { type: 'string' } } });
  let rows: ModelFolderStatus[];
  let where: string;
  if (values.config) {
    const config = loadServerConfig(values.config);
    where = values.config;
    rows = config.models
      .filter((m) => !m.remote || m.path)
      .map((m) => modelFolderStatus(m.path ?? path.resolve(config.modelsDir, m.name), { dtype: m.dtype }, m.name));
  } else {
    where = path.resolve(values.dir ?? 'examples/models');
    rows = listModelFolders(where);
  }
  if (rows.length === 0) {
    console.error(`no model folders under ${where}`);
    return 1;
  }
  for (const r of rows) console.log(describeStatus(r));
  return rows.some((r) => !r.ok) ? 1 : 0;
}

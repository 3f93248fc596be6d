// The deploy-time check that an algorithm's router heads ship in the folders of the models that run them.
import { wantsFor, type Algorithm } from '../../shared/algorithm.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelFolder } from '../runner/modelFolder.ts';

/**
 * A router head the algorithm reads must ship in the model's folder (routers/routers.json), and it
 * runs on the export's "hidden_states" output; a plain Hugging Face export has neither. Found here,
 * at deploy, rather than as a failed step on the first request. Models without a folder on this
 * host (injected runners, remote sub-servers) are not checked: their heads are not known here.
 */
export function refuseMissingHeads(alg: Algorithm<unknown>, models: readonly string[], folders: ReadonlyMap<string, ModelFolder>, field: string): void {
  for (const [i, m] of models.entries()) {
    const folder = folders.get(m);
    if (!folder) continue;
    const have = Object.keys(folder.routers);
    // model ids are 1-based places in the algorithm's model list
    const lacking = wantsFor(alg, i + 1).heads.find((h) => !have.includes(h));
    if (lacking === undefined) continue;
    throw new TokenRouterError(
      'invalid_request',
      `the algorithm reads router head "${lacking}" on model "${m}", whose folder ${folder.dir} ships ${have.length ? `only ${have.join(', ')}` : 'none'}: router-head algorithms need a trained head in routers/routers.json and a "hidden_states" output in the ONNX export`,
      field,
    );
  }
}

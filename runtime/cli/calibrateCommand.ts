// `tokenrouter calibrate`: asks a running server (POST /admin/calibrate) for a built-in's threshold giving a target share of tokens on one model, and prints how to deploy it.
import fs from 'node:fs';
import path from 'node:path';
import { calibrateResponseSchema, CALIBRATABLE, type CalibrateResponse } from '../../shared/api/calibrate.ts';
import { TokenRouterError } from '../errors.ts';
import { parseFlags } from '../util/cliFlags.ts';

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

/** The admin token: --token, TOKENROUTER_ADMIN_TOKEN, or <dataDir>/admin-token when --data-dir names it. */
function adminToken(flag: string | undefined, dataDir: string | undefined): string | undefined {
  if (flag) return flag;
  if (process.env.TOKENROUTER_ADMIN_TOKEN) return process.env.TOKENROUTER_ADMIN_TOKEN;
  if (!dataDir) return undefined;
  const file = path.join(path.resolve(dataDir), 'admin-token');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    throw new TokenRouterError('invalid_request', `--data-dir: no admin token at ${file}`, 'data-dir');
  }
}

function numberFlag(name: string, text: string | undefined, min: number, max: number, int: boolean): number | undefined {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (!Number.isFinite(v) || v < min || v > max || (int && !Number.isInteger(v))) {
    throw new TokenRouterError('invalid_request', `--${name} must be ${int ? 'an integer' : 'a number'} from ${min} to ${max}, got "${text}"`, name);
  }
  return v;
}

export async function calibrateCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: {
      url: { type: 'string' },
      algorithm: { type: 'string' },
      target: { type: 'string' },
      model: { type: 'string' },
      task: { type: 'string' },
      problems: { type: 'string' },
      iterations: { type: 'string' },
      token: { type: 'string' },
      'data-dir': { type: 'string' },
    },
  });
  const algorithm = values.algorithm ?? 'r-stitch';
  if (!CALIBRATABLE[algorithm])
    throw new TokenRouterError(
      'invalid_request',
      `--algorithm: "${algorithm}" has no threshold to calibrate; one of ${Object.keys(CALIBRATABLE).join(', ')}`,
      'algorithm',
    );
  if (values.target === undefined)
    throw new TokenRouterError('invalid_request', '--target is required: the share of tokens wanted on the large model, 0–1 (e.g. 0.2)', 'target');
  const target = numberFlag('target', values.target, 0, 1, false)!;
  const url = (values.url ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
  const token = adminToken(values.token, values['data-dir']);
  const body = {
    builtin: algorithm,
    target,
    model: values.model ?? 'large',
    ...(values.task === undefined ? {} : { task: values.task }),
    problems: numberFlag('problems', values.problems, 1, 1e6, true),
    iterations: numberFlag('iterations', values.iterations, 1, 12, true),
  };
  console.log(`calibrating ${algorithm}'s ${CALIBRATABLE[algorithm].param} on ${url} for ${pct(target)} of tokens on ${body.model} …`);
  let res: Response;
  try {
    res = await fetch(`${url}/admin/calibrate`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  } catch (e) {
    throw new TokenRouterError(
      'unavailable',
      `--url: cannot reach ${url}: ${(e as Error).cause ?? (e as Error).message}; start the server (npm start) or pass --url`,
      'url',
    );
  }
  const json = (await res.json().catch(() => null)) as unknown;
  if (!res.ok) {
    const msg = (json as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${res.status}`;
    const hint = res.status === 401 ? ' (pass --token, TOKENROUTER_ADMIN_TOKEN or --data-dir)' : '';
    throw new TokenRouterError('invalid_request', `the server refused: ${msg}${hint}`, null);
  }
  const c: CalibrateResponse = calibrateResponseSchema.parse(json);
  for (const t of c.trials) console.log(`  ${c.param} ${String(t.value).padEnd(10)} ${pct(t.share).padStart(8)} on ${c.model}   accuracy ${pct(t.accuracy)}`);
  console.log(
    `\n${c.param} = ${c.value}: ${pct(c.share)} of tokens on ${c.model} (target ${pct(c.target)}), accuracy ${pct(c.accuracy)} on ${c.problems} validation problems`,
  );
  if (!c.reached) console.log(`no ${c.param} in range reaches ${pct(c.target)}: this is the nearest end`);
  console.log(
    `\ndeploy it: curl -s ${url}/admin/algorithms/${algorithm}/versions -H 'Content-Type: application/json' -d '${JSON.stringify({ builtin: algorithm, params: { [c.param]: c.value }, activate: true, replace: true })}'`,
  );
  return 0;
}

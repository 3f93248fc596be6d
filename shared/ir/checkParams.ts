// Parameter checking for one node: fills defaults, rejects unknown names, wrong types and out-of-range values.
import { issue, type IrIssue } from './irIssue.ts';
import type { NodeSpec, ParamSpec, ParamValue } from './nodeTypes.ts';

/** The deployable models, as GET /admin/models lists them. */
export interface ModelCatalogEntry {
  name: string;
  heads: readonly string[];
  vocabSize?: number;
}

const NAME_RE = /^[A-Za-z0-9_.:-]+$/;
const MAX_TOKEN_ID = 2 ** 31 - 1;

function isPlainRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(6)));
}

/**
 * Checks `raw` against `spec`, pushing issues; returns the parameters with defaults filled in.
 * `catalog` null skips existence checks of models and heads (an IR loaded without a catalog).
 */
export function checkParams(
  nodeId: string,
  spec: NodeSpec,
  raw: Readonly<Record<string, unknown>>,
  catalog: readonly ModelCatalogEntry[] | null,
  memoryIds: ReadonlySet<string>,
  issues: IrIssue[],
): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = Object.create(null);
  for (const key of Object.keys(raw)) {
    if (!spec.params.some((p) => p.name === key)) {
      issues.push(issue(nodeId, 'invalid_param', `${spec.label} has no parameter "${key}".`, `Remove "${key}" from the node's parameters.`));
    }
  }
  for (const p of spec.params) {
    const value = Object.hasOwn(raw, p.name) ? raw[p.name] : p.default;
    const problem = checkOne(p, value, catalog, memoryIds);
    if (problem) {
      issues.push(issue(nodeId, problem.code, `${spec.label} · ${p.label}: ${problem.message}`, problem.fix));
      out[p.name] = structuredClone(p.default as ParamValue);
    } else {
      out[p.name] = structuredClone(value as ParamValue);
    }
  }
  // Heads depend on the node's model, so they are checked once the model is known good.
  const model = out.model;
  if (spec.params.some((p) => p.kind === 'head') && typeof model === 'string' && catalog) {
    const entry = catalog.find((m) => m.name === model);
    const head = out.head as string;
    if (entry && !entry.heads.includes(head)) {
      const fix = entry.heads.length
        ? `Pick a head "${model}" ships: ${entry.heads.join(', ')}.`
        : `"${model}" ships no router heads: read a head on a model that has one.`;
      issues.push(issue(nodeId, 'unknown_head', `Model "${model}" has no router head "${head}".`, fix));
    }
  }
  return { ...out };
}

interface Problem {
  code: IrIssue['code'];
  message: string;
  fix: string;
}

function checkOne(p: ParamSpec, v: unknown, catalog: readonly ModelCatalogEntry[] | null, memoryIds: ReadonlySet<string>): Problem | null {
  const names = catalog?.map((m) => m.name) ?? [];
  const badModel = (m: string): Problem | null => {
    if (!NAME_RE.test(m)) return { code: 'invalid_param', message: `"${m}" is not a model name.`, fix: 'Pick a model from the list.' };
    if (catalog && !names.includes(m))
      return { code: 'unknown_model', message: `model "${m}" is not deployed.`, fix: `Pick one of: ${names.join(', ') || '(no models deployed)'}.` };
    return null;
  };
  switch (p.kind) {
    case 'number':
    case 'int': {
      if (typeof v !== 'number' || !Number.isFinite(v))
        return { code: 'invalid_param', message: 'must be a number.', fix: `Enter a number between ${fmt(p.min)} and ${fmt(p.max)}.` };
      if (p.kind === 'int' && !Number.isInteger(v))
        return { code: 'invalid_param', message: `${fmt(v)} is not a whole number.`, fix: `Enter a whole number between ${p.min} and ${p.max}.` };
      const low = p.kind === 'number' && p.minExclusive ? v <= p.min : v < p.min;
      if (low || v > p.max) {
        const range = `${p.kind === 'number' && p.minExclusive ? '(' : '['}${fmt(p.min)}, ${fmt(p.max)}]`;
        return { code: 'param_out_of_range', message: `${fmt(v)} is outside ${range}.`, fix: `Set a value in ${range}.` };
      }
      return null;
    }
    case 'boolean':
      return typeof v === 'boolean' ? null : { code: 'invalid_param', message: 'must be true or false.', fix: 'Toggle the switch.' };
    case 'enum':
      return typeof v === 'string' && p.options.includes(v)
        ? null
        : { code: 'invalid_param', message: `${JSON.stringify(v)} is not an option.`, fix: `Pick one of: ${p.options.join(' ')}.` };
    case 'model':
      return typeof v === 'string' ? badModel(v) : { code: 'invalid_param', message: 'must be a model name.', fix: 'Pick a model from the list.' };
    case 'head':
      return typeof v === 'string' && NAME_RE.test(v)
        ? null
        : { code: 'invalid_param', message: 'must be a head name.', fix: 'Enter a head name such as citer, r2r or colm.' };
    case 'text':
      return typeof v === 'string' && v.length <= p.maxLength
        ? null
        : { code: 'invalid_param', message: `must be text of at most ${p.maxLength} characters.`, fix: 'Shorten the text.' };
    case 'ids':
      if (!Array.isArray(v) || v.length > p.maxItems)
        return { code: 'invalid_param', message: `must be a list of at most ${p.maxItems} token ids.`, fix: 'Enter token ids separated by commas.' };
      for (const id of v) {
        if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > MAX_TOKEN_ID)
          return { code: 'param_out_of_range', message: `${JSON.stringify(id)} is not a token id.`, fix: 'Use whole numbers ≥ 0.' };
      }
      return null;
    case 'weights': {
      if (!isPlainRecord(v)) return { code: 'invalid_param', message: 'must map model names to weights.', fix: 'Give each model a weight ≥ 0.' };
      let total = 0;
      for (const [model, w] of Object.entries(v)) {
        const bad = badModel(model);
        if (bad) return bad;
        if (typeof w !== 'number' || !Number.isFinite(w) || w < 0 || w > 1e6)
          return {
            code: 'invalid_weights',
            message: `weight of "${model}" must be a number in [0, 1e6].`,
            fix: `Set the weight of "${model}" to a number ≥ 0.`,
          };
        total += w;
      }
      return total > 0 ? null : { code: 'invalid_weights', message: 'all weights are zero.', fix: 'Give at least one model a positive weight.' };
    }
    case 'memoryRefs':
      if (!Array.isArray(v) || v.length > p.maxItems)
        return { code: 'invalid_param', message: `must list at most ${p.maxItems} memory nodes.`, fix: 'Pick memory nodes from the list.' };
      for (const ref of v) {
        if (typeof ref !== 'string' || !memoryIds.has(ref))
          return {
            code: 'unknown_memory',
            message: `${JSON.stringify(ref)} is not a memory node of this graph.`,
            fix: 'Pick Counter or Moving-average nodes from the list.',
          };
      }
      return null;
  }
}

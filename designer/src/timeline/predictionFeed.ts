// The prediction check's client: deployed algorithms (newest deploy first) and GET /admin/prediction-check, each answer checked against its schema.
import { algorithmListSchema } from '../../../shared/api/admin.ts';
import { predictionCheckSchema, type PredictionCheck } from '../../../shared/api/evaluate.ts';
import { adminToken } from './feed.ts';

async function getJson(path: string): Promise<unknown> {
  const token = adminToken();
  const res = await fetch(path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) throw new Error((body as { error?: { message?: string } } | null)?.error?.message ?? `${res.status} ${res.statusText}`);
  return body;
}

/** Served algorithms, the most recently deployed version first (the one a user just deployed leads), and the server's default among them. */
export async function deployedAlgorithms(): Promise<{ names: string[]; defaultName: string | null }> {
  const { algorithms } = algorithmListSchema.parse(await getJson('/admin/algorithms'));
  const createdOf = (a: (typeof algorithms)[number]) => a.versions.find((v) => v.version === a.activeVersion)?.createdAt ?? '';
  // a seeded built-in the served models cannot run has nothing to check
  const served = algorithms.filter((a) => a.activeVersion !== null && a.served);
  return {
    names: served.sort((a, b) => createdOf(b).localeCompare(createdOf(a))).map((a) => a.name),
    defaultName: served.find((a) => a.isDefault)?.name ?? null,
  };
}

export async function predictionCheck(algorithm: string, windowMs: number): Promise<PredictionCheck> {
  return predictionCheckSchema.parse(await getJson(`/admin/prediction-check?algorithm=${encodeURIComponent(algorithm)}&windowMs=${windowMs}`));
}

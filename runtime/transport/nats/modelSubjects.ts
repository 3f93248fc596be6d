// NATS subject names for one model: its replicas' heartbeats, each replica instance's link, each entry's inbox.

export interface ModelSubjects {
  /** Replicas announce themselves, their load and their leave here. */
  heartbeat: string;
  /** Prefix of the entries' inboxes (`${entries}.${session}`): replicas answer an entry there. */
  entries: string;
  /** Subject of one replica instance: entries link to `${replica}.in`. */
  replica(name: string, incarnation: string): string;
}

/** Subject tokens may not contain '.', '*', '>' or whitespace; model and replica names are escaped. */
function token(s: string): string {
  return s.replace(/[.*>\s%]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export function modelSubjects(prefix: string, model: string): ModelSubjects {
  const base = `${prefix}.${token(model)}`;
  return {
    heartbeat: `${base}.heartbeat`,
    entries: `${base}.entries`,
    replica: (name, incarnation) => `${base}.r.${token(name)}.${incarnation}`,
  };
}

export const DEFAULT_SUBJECT_PREFIX = 'tokenrouter';

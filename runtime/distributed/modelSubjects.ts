// NATS subject names for one model: admission (queue group), one subject per replica instance, heartbeats, entry keepalives.

export interface ModelSubjects {
  /** Admission of an entry (hello request/reply); every replica subscribes in queue group `queue`, so any one answers. */
  admit: string;
  queue: string;
  /** Replicas publish liveness and load here. */
  heartbeat: string;
  /** Entries publish keepalives and goodbyes here, so replicas can free caches of an entry that vanished. */
  entries: string;
  /** Subject of one replica instance: steps (new caches placed there by load, and the caches it holds) and releases. */
  replica(name: string, incarnation: string): string;
}

/** Subject tokens may not contain '.', '*', '>' or whitespace; model and replica names are escaped. */
function token(s: string): string {
  return s.replace(/[.*>\s%]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export function modelSubjects(prefix: string, model: string): ModelSubjects {
  const base = `${prefix}.${token(model)}`;
  return {
    admit: `${base}.admit`,
    queue: `${base}.replicas`,
    heartbeat: `${base}.heartbeat`,
    entries: `${base}.entries`,
    replica: (name, incarnation) => `${base}.r.${token(name)}.${incarnation}`,
  };
}

export const DEFAULT_SUBJECT_PREFIX = 'tokenrouter';

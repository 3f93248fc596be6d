// Pure admission planning against a KV pool: which waiting requests get a reservation, and which pending-return caches make room.

export interface AdmissionView {
  capacity: number;
  reserved: number;
  /** KV tokens each waiting request needs, FIFO (the head waits for room before anyone behind it). */
  waiting: readonly number[];
  /** Tokens each pending-return cache holds reserved, oldest first: eviction candidates. */
  evictable: readonly number[];
}

export interface AdmissionPlan {
  /** Admit the first `admit` waiting requests. */
  admit: number;
  /** Evict the first `evict` pending-return caches first. */
  evict: number;
}

/** Evicts only as many pending-return caches as it takes for the head to fit, and none when even all of them would not do. */
export function planAdmission(v: AdmissionView): AdmissionPlan {
  let free = v.capacity - v.reserved;
  let evictableLeft = v.evictable.reduce((s, t) => s + t, 0);
  let admit = 0;
  let evict = 0;
  for (const need of v.waiting) {
    if (free < need && free + evictableLeft < need) break;
    while (free < need) {
      free += v.evictable[evict];
      evictableLeft -= v.evictable[evict];
      evict++;
    }
    free -= need;
    admit++;
  }
  return { admit, evict };
}

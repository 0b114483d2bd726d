/*
 * A stick table's entries by key, as HAProxy 2.6 keeps at most `size` of them (src/stick_table.c).
 * Each entry sits in an expiry tree (eb32, by tick; equal ticks in the order they were queued)
 * at the tick it was queued at, which a touch does not move (__stktable_touch_with_exp sets
 * `expire` only). Two walks move or free it:
 * - the expiry task (stktable_trash_expired), at each queued tick: an entry a stream holds is
 *   skipped; one touched since is queued again at its `expire`; the rest are freed;
 * - a new key in a full table (__stksess_new): __stktable_trash_oldest walks from the oldest tick,
 *   looking at no more than 2 x (size/256 + 1) nodes, for size/256 + 1 to free: it skips a held
 *   one, queues a touched one again at its `expire` (and looks at it again at once where that is
 *   before the next node), and frees the first untouched one. Where it frees none, or the table
 *   is `nopurge`, the new key gets no entry: its request is not tracked, and a rule that reads its
 *   counter finds nothing (an sc_* fetch fails, so its test does not hold).
 * One entry in the model is trackedEntry's (stick-table-rate.js): `expiresAt()`, `held(nowMs)`,
 * `releasedAt(nowMs)`.
 */

/**
 * The store of one table: `size` entries at most (Infinity: no limit), `nopurge`, `expireMs` (the
 * table's expire; Infinity where it has none: no task frees an entry, and a tick is the touch's).
 * entry(key, nowMs, make) gives the key's entry (made by `make()` where it has none, and queued
 * as its first touch at `nowMs` queues it), or null where the table has no room for it.
 */
export function entryStore({ size = Infinity, nopurge = false, expireMs = Infinity }) {
  const expires = Number.isFinite(expireMs);
  const byKey = new Map();
  // The expiry tree as a list in eb32 order: {tick, key, entry}.
  const tree = expiryTree(byKey);
  const catchUp = (nowMs) => expires && tree.expireUpTo(nowMs);
  return {
    entry(key, nowMs, make) {
      catchUp(nowMs);
      const had = byKey.get(key);
      if (had) return had;
      if (byKey.size >= size && (nopurge || !tree.trashOldest(nowMs, Math.floor(size / 256) + 1))) return null;
      const entry = make();
      byKey.set(key, entry);
      // __stktable_store queues it at its `expire`, which its first touch, in this tick, sets.
      tree.queue({ tick: nowMs + (expires ? expireMs : 0), key, entry });
      return entry;
    },
    /** The key's entry at `nowMs` where the table holds one, else null (a lookup makes none). */
    peek(key, nowMs) {
      catchUp(nowMs);
      return byKey.get(key) ?? null;
    },
  };
}

/** The expiry tree of a table whose entries `byKey` holds: queue, the expiry task, the trash. */
function expiryTree(byKey) {
  const nodes = [];
  const queue = (node) => {
    let i = nodes.length;
    while (i > 0 && nodes[i - 1].tick > node.tick) i -= 1;
    nodes.splice(i, 0, node);
  };
  const free = (i) => byKey.delete(nodes.splice(i, 1)[0].key);
  const requeue = (i, tick) => queue({ ...nodes.splice(i, 1)[0], tick });
  return {
    queue,
    /**
     * The expiry task's walks up to `nowMs`, each at the tick it runs at (the oldest queued). One
     * a stream held then is left where it is, and looked at as of when its last stream ended
     * (stksess_kill_if_expired frees it then if it has expired).
     */
    expireUpTo(nowMs) {
      let i = 0;
      while (i < nodes.length && nodes[i].tick <= nowMs) {
        const { tick, entry } = nodes[i];
        const at = entry.held(tick) ? entry.releasedAt(nowMs) : tick;
        if (at === null) i += 1;
        else if (entry.expiresAt() > at) requeue(i, entry.expiresAt());
        else free(i);
      }
    },
    /** __stktable_trash_oldest at `nowMs`, `toBatch` to free: how many it freed. */
    trashOldest(nowMs, toBatch) {
      let searches = 2 * toBatch;
      let freed = 0;
      let i = 0;
      while (freed < toBatch && i < nodes.length && (searches -= 1) >= 0) {
        const { tick, entry } = nodes[i];
        if (entry.held(nowMs)) i += 1;
        // Queued again; it is next where its new tick comes before the node after it.
        else if (entry.expiresAt() !== tick) requeue(i, entry.expiresAt());
        else {
          free(i);
          freed += 1;
        }
      }
      return freed;
    },
  };
}

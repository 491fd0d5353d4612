/**
 * Where a job lives: the partition of its id. A leaf of the storage seam (it imports nothing), so
 * that the interfaces, the Redis codecs and the roles can all place ids by the same rule.
 */

/**
 * The partition of a job id: FNV-1a over the id's UTF-16 units, modulo the count. Stable across
 * processes and versions (it decides where a job lives), so it must never change.
 */
export function partitionOf(id: string, count: number): number {
  if (count === 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % count;
}

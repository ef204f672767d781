// cluster-key-slot (a dependency of ioredis, which computes slots with it) ships no types.
declare module 'cluster-key-slot' {
  /** The Redis Cluster slot (0..16383) of a key: CRC16 of the key, or of its {hash tag} when it has one. */
  export default function calculateSlot(key: string | Buffer): number;
}

import { createHash, randomBytes } from "node:crypto";

/** The only source of randomness (STYLE habit 3). Tests may pass a seeded one. */
export interface Random {
  bytes(length: number): Buffer;
}

export const cryptoRandom: Random = { bytes: (length) => randomBytes(length) };

/**
 * Deterministic random for tests: SHA-256 in counter mode over a seed. Never use it in production;
 * it exists so a failing test can be replayed exactly.
 */
export function seededRandom(seed: string): Random {
  let counter = 0;
  return {
    bytes(length: number): Buffer {
      const chunks: Buffer[] = [];
      let have = 0;
      while (have < length) {
        const block = createHash("sha256").update(`${seed}:${counter++}`).digest();
        chunks.push(block);
        have += block.length;
      }
      return Buffer.concat(chunks).subarray(0, length);
    },
  };
}

/** URL-safe base64 without padding (contract.md#spec-2-3). */
export function randomToken(random: Random, byteLength = 32): string {
  return random.bytes(byteLength).toString("base64url");
}

/** Uniform integer in [min, max) by rejection sampling over 53-bit draws; max - min must be <= 2^53. */
export function randomIntBetween(random: Random, min: number, max: number): number {
  const range = max - min;
  const limit = Math.floor(2 ** 53 / range) * range;
  for (;;) {
    const b = random.bytes(7);
    const draw = b.readUIntBE(0, 6) * 32 + (b[6]! & 0x1f); // 53 bits
    if (draw < limit) return min + (draw % range);
  }
}

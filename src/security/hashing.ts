import { createHash, createHmac, hash, timingSafeEqual } from "node:crypto";

/**
 * SHA-256 hex of a high-entropy secret (session id, token, API key) for storage and lookup. Node's
 * one-shot `hash` (Node 20.12+), not a Hash object per call: every session check hashes its cookie,
 * and the object cost more than the digest (docs/performance.md#the-session-check).
 */
export function sha256Hex(value: string): string {
  return hash("sha256", value, "hex");
}

/** Constant-time equality of two strings, by comparing their SHA-256 digests (equal length). */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

/**
 * contract.md#d25: the key of an email or IP in lockout and limit rows, an HMAC under a secret derived from
 * SECRETS_KEY, so a copy of the database (or of Redis) can't be searched for a known address.
 * 128 bits: collisions are out of reach, and the rows stay small.
 */
export type SubjectHasher = (subject: string) => string;

export function keyedSubjectHasher(secret: string): SubjectHasher {
  return (subject) => createHmac("sha256", secret).update(subject, "utf8").digest("hex").slice(0, 32);
}

/**
 * contract.md#d26: what is stored of a 6-digit login code. A code has only 20 bits, so a plain hash would fall
 * to a search of a database copy; this one is keyed, and bound to its link's token hash.
 */
export function loginCodeHash(subjects: SubjectHasher, tokenHash: string, code: string): string {
  return subjects(`login_code\n${tokenHash}\n${code}`);
}

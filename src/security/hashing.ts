import { createHash, timingSafeEqual } from "node:crypto";

/** SHA-256 hex of a high-entropy secret (session id, token, API key) for storage and lookup. */
export function sha256Hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/** Constant-time equality of two strings, by comparing their SHA-256 digests (equal length). */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

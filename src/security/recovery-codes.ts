/**
 * One-time recovery codes (D14): 10 per set, each 10 characters of Crockford-like base32 shown as
 * xxxxx-xxxxx (50 bits). Stored only as SHA-256 of the normalised code.
 */
import type { Random } from "../core/random.js";
import { sha256Hex } from "./hashing.js";

export const RECOVERY_CODE_COUNT = 10;
const ALPHABET = "abcdefghjkmnpqrstuvwxyz023456789"; // 32 symbols, no o/1/l/i: read back from paper

export function generateRecoveryCodes(random: Random): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = [...random.bytes(10)].map((b) => ALPHABET[b & 31]!);
    return `${chars.slice(0, 5).join("")}-${chars.slice(5).join("")}`;
  });
}

/** Case, spaces and dashes don't matter when a person types the code back. */
export function normalizeRecoveryCode(code: string): string | undefined {
  const compact = code.toLowerCase().replace(/[\s-]/g, "");
  return /^[a-z0-9]{10}$/.test(compact) ? compact : undefined;
}

export function hashRecoveryCode(normalized: string): string {
  return sha256Hex(`recovery:${normalized}`);
}

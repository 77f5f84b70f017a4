/**
 * One-time recovery codes (contract.md#d14): RECOVERY_CODE_COUNT per set, each RECOVERY_CODE_LENGTH characters
 * of a 32-symbol alphabet shown in groups of 4 (xxxx-xxxx-…; 5 bits a character, 80 bits in all). Stored only as SHA-256 of the normalised code bound to its
 * tenant and member: a stolen table can't be searched for all members at once, and 80 bits
 * can't be searched for one.
 */
import type { Random } from "../core/random.js";
import { RECOVERY_CODE_COUNT, RECOVERY_CODE_LENGTH as CODE_LENGTH } from "../rules.js";
import { sha256Hex } from "./hashing.js";

const ALPHABET = "abcdefghjkmnpqrstuvwxyz023456789"; // 32 symbols, no o/1/l/i: read back from paper

export function generateRecoveryCodes(random: Random): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = [...random.bytes(CODE_LENGTH)].map((b) => ALPHABET[b & 31]!).join("");
    return chars.match(/.{4}/g)!.join("-");
  });
}

/** Case, spaces and dashes don't matter when a person types the code back. */
export function normalizeRecoveryCode(code: string): string | undefined {
  const compact = code.toLowerCase().replace(/[\s-]/g, "");
  return new RegExp(`^[a-z0-9]{${CODE_LENGTH}}$`).test(compact) ? compact : undefined;
}

export function hashRecoveryCode(tenantId: string, memberId: number, normalized: string): string {
  return sha256Hex(`recovery:${tenantId}:${memberId}:${normalized}`);
}

/**
 * TOTP per RFC 6238 (contract.md#d14): SHA-1, 6 digits, 30 s steps, ±1 step, 160-bit secrets, through the
 * otpauth library. Replay is refused by the caller, which stores the last accepted step.
 */
import { Secret, TOTP } from "otpauth";
import type { Random } from "../core/random.js";

const PERIOD_SECONDS = 30;
const SECRET_BYTES = 20;

function totpFor(secretBase32: string, issuer = "", label = ""): TOTP {
  return new TOTP({ issuer, label, algorithm: "SHA1", digits: 6, period: PERIOD_SECONDS, secret: Secret.fromBase32(secretBase32) });
}

export function generateTotpSecret(random: Random): string {
  const bytes = random.bytes(SECRET_BYTES);
  return new Secret({ buffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer }).base32;
}

/** otpauth:// URI for authenticator apps; the issuer is the tenant domain, the label the email. */
export function totpUri(secretBase32: string, issuer: string, accountName: string): string {
  return totpFor(secretBase32, issuer, accountName).toString();
}

/**
 * The time step the code belongs to (now's step ±1), or undefined when it matches none.
 * Only 6-digit strings are tried.
 */
export function matchTotpStep(secretBase32: string, code: string, now: number): number | undefined {
  if (!/^[0-9]{6}$/.test(code)) return undefined;
  const delta = totpFor(secretBase32).validate({ token: code, timestamp: now, window: 1 });
  if (delta === null) return undefined;
  return Math.floor(now / 1000 / PERIOD_SECONDS) + delta;
}

/**
 * TOTP per RFC 6238 (contract.md#d14) with the parameters of rules.ts TOTP_PARAMETERS, through the otpauth
 * library. Replay is refused by the caller, which stores the last accepted step.
 */
import { Secret, TOTP } from "otpauth";
import type { Random } from "../core/random.js";
import { TOTP_PARAMETERS } from "../rules.js";

const { algorithm, digits, periodSeconds } = TOTP_PARAMETERS;
const CODE_PATTERN = new RegExp(`^[0-9]{${digits}}$`);

function totpFor(secretBase32: string, issuer = "", label = ""): TOTP {
  return new TOTP({ issuer, label, algorithm, digits, period: periodSeconds, secret: Secret.fromBase32(secretBase32) });
}

export function generateTotpSecret(random: Random): string {
  const bytes = random.bytes(TOTP_PARAMETERS.secretBytes);
  return new Secret({ buffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer }).base32;
}

/** otpauth:// URI for authenticator apps; the issuer is the tenant domain, the label the email. */
export function totpUri(secretBase32: string, issuer: string, accountName: string): string {
  return totpFor(secretBase32, issuer, accountName).toString();
}

/** Whether `code` has a TOTP code's shape (its digits, nothing else); a recovery code never has. */
export function isTotpShaped(code: string): boolean {
  return CODE_PATTERN.test(code);
}

/**
 * The time step the code belongs to (now's step ±1), or undefined when it matches none.
 * Only strings of TOTP_PARAMETERS.digits digits are tried.
 */
export function matchTotpStep(secretBase32: string, code: string, now: number): number | undefined {
  if (!isTotpShaped(code)) return undefined;
  const delta = totpFor(secretBase32).validate({ token: code, timestamp: now, window: TOTP_PARAMETERS.window });
  if (delta === null) return undefined;
  return Math.floor(now / 1000 / periodSeconds) + delta;
}

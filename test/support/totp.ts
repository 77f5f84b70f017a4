/**
 * An independent TOTP (RFC 6238 over RFC 4226 HOTP) for tests, written with node:crypto only, so
 * the service's library is checked against a second implementation rather than against itself.
 */
import { createHmac } from "node:crypto";

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function base32Decode(text: string): Buffer {
  let bits = "";
  for (const ch of text.replace(/=+$/, "").toUpperCase()) {
    const value = BASE32.indexOf(ch);
    if (value < 0) throw new Error(`not base32: ${ch}`);
    bits += value.toString(2).padStart(5, "0");
  }
  const bytes: number[] = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

export function hotp(key: Buffer, counter: number, digits = 6, algorithm = "sha1"): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac(algorithm, key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits;
  return String(binary).padStart(digits, "0");
}

/** The code for `nowMs`, shifted by `stepOffset` 30-second steps. */
export function totpAt(secretBase32: string, nowMs: number, stepOffset = 0): string {
  return hotp(base32Decode(secretBase32), Math.floor(nowMs / 1000 / 30) + stepOffset);
}

/** A 6-digit code that is none of the secret's codes within the ±1 step window at `nowMs`. */
export function wrongCode(secretBase32: string, nowMs: number): string {
  const near = new Set([-1, 0, 1].map((offset) => totpAt(secretBase32, nowMs, offset)));
  return ["000000", "111111", "222222", "333333"].find((c) => !near.has(c))!;
}

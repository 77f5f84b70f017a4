/**
 * decisions.md#openid-provider-clients: a confidential OAuth client's secret. It is 256 random bits,
 * shown once when the client is made and stored only as its SHA-256 (hex): a high-entropy random
 * secret needs no slow hash, as session ids. Presented secrets are compared in constant time.
 */
import { randomToken, type Random } from "../core/random.js";
import { constantTimeEqual, sha256Hex } from "./hashing.js";

/** 32 random bytes: 256 bits, as contract.md#d28's tokens. */
export const CLIENT_SECRET_BYTES = 32;

/** A new secret (base64url, 43 characters), to be shown once and then forgotten. */
export function generateClientSecret(random: Random): string {
  return randomToken(random, CLIENT_SECRET_BYTES);
}

/** What is stored of a secret: its SHA-256, hex. */
export function hashClientSecret(secret: string): string {
  return sha256Hex(secret);
}

/**
 * Whether `presented` is the secret whose hash is stored, in constant time: the presented value is
 * hashed, then the two hashes are compared without an early exit, so the time says nothing about
 * how much of it was right.
 */
export function clientSecretMatches(secretHash: string, presented: string): boolean {
  return constantTimeEqual(secretHash, hashClientSecret(presented));
}

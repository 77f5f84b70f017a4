/**
 * decisions.md#openid-provider-signing-keys: making one token signing key pair. The key material
 * comes from the operating system's generator (jose over node:crypto): a seeded deps.random would
 * make keys anyone with the seed could rebuild, and tests never need to predict a key, only its kid.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from "jose";

export const SIGNING_ALGS = ["ES256", "RS256"] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

export interface GeneratedSigningKey {
  kid: string;
  alg: SigningAlg;
  /** Carries `d` (and the RSA primes): seal it before it is stored, never log it. */
  privateJwk: JWK;
  publicJwk: JWK;
}

/**
 * A new key pair as JWKs, `kid` the RFC 7638 thumbprint. Asynchronous: RSA generation takes tens
 * of milliseconds and must not block the event loop on a request's path.
 */
export async function generateSigningKey(alg: SigningAlg): Promise<GeneratedSigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === "RS256" && { modulusLength: 2048 }) });
  const exportedPublic = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(exportedPublic, "sha256");
  const labels = { kid, alg, use: "sig" };
  return { kid, alg, privateJwk: { ...(await exportJWK(privateKey)), ...labels }, publicJwk: { ...exportedPublic, ...labels } };
}

/**
 * AES-256-GCM for secrets the service must read back: webhook signing secrets and outbox payloads
 * (which carry links with tokens). Format: v1.<iv>.<ciphertext>.<tag>, base64url parts.
 */
import { createCipheriv, createDecipheriv, createHmac } from "node:crypto";
import type { Random } from "../core/random.js";

export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
  /** A stable secret for one purpose (e.g. ALTCHA signing), derived so the master key is never reused raw. */
  deriveSecret(purpose: string): string;
}

const SEALED_FORM = /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{22}$/;

/** True for a value `seal` produced (12-byte iv, 16-byte tag); a provider's own secret never has this form. */
export function isSealed(value: string): boolean {
  return SEALED_FORM.test(value);
}

export function createSecretBox(key: Buffer, random: Random): SecretBox {
  if (key.length !== 32) throw new Error("SECRETS_KEY must be 32 bytes");
  return {
    seal(plaintext) {
      const iv = random.bytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return ["v1", iv, data, cipher.getAuthTag()].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
    },
    deriveSecret(purpose) {
      return createHmac("sha256", key).update(`latch:${purpose}`).digest("base64url");
    },
    open(sealed) {
      const [version, iv, data, tag] = sealed.split(".");
      if (version !== "v1" || !iv || data === undefined || !tag) throw new Error("Malformed sealed secret");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}

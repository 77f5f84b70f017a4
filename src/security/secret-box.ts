/**
 * AES-256-GCM for secrets the service must read back: webhook signing secrets, TOTP secrets,
 * outbox payloads (which carry links with tokens) and tenants' bot secrets.
 *
 * Format: v2.<kid>.<iv>.<ciphertext>.<tag>, base64url parts, where kid names the key (keyId). Values
 * sealed before key ids existed are v1.<iv>.<ciphertext>.<tag>: they are opened with the current key,
 * then each previous key (GCM's tag refuses a wrong key). New seals always use the current key, so
 * SECRETS_KEY can be rotated: the old key stays in SECRETS_KEY_PREVIOUS until `latch secrets reseal`.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac } from "node:crypto";
import type { Random } from "../core/random.js";
import { SECRETS_KEY_BYTES } from "../rules.js";

export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
  /** True when `sealed` names the current key: re-sealing it would change nothing. */
  isSealedWithCurrentKey(sealed: string): boolean;
  /** A stable secret for one purpose (e.g. ALTCHA signing), derived so the master key is never reused raw. */
  deriveSecret(purpose: string): string;
}

const PART = "[A-Za-z0-9_-]";
const SEALED_FORM = new RegExp(`^(v1|v2\\.${PART}{8})\\.${PART}{16}\\.${PART}*\\.${PART}{22}$`);

/** True for a value `seal` produced, in any format (12-byte iv, 16-byte tag); a provider's own secret never has this form. */
export function isSealed(value: string): boolean {
  return SEALED_FORM.test(value);
}

/**
 * The 8-character id a sealed value carries: SHA-256 of a label and the key, so it names the key
 * without revealing it (48 bits of a one-way hash; the label keeps it apart from any other use).
 */
export function keyId(key: Buffer): string {
  return createHash("sha256").update("latch-key-id:").update(key).digest("base64url").slice(0, 8);
}

interface Key {
  id: string;
  bytes: Buffer;
}

function decrypt(key: Buffer, iv: string, data: string, tag: string): string {
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
}

/** Tries each candidate key in turn; a wrong key fails GCM's tag check. */
function decryptWithAny(keys: Key[], iv: string, data: string, tag: string): string {
  for (const key of keys) {
    try {
      return decrypt(key.bytes, iv, data, tag);
    } catch {
      // not this key
    }
  }
  throw new Error("Sealed secret can't be opened with any configured key");
}

/** `previousKeys`: SECRETS_KEY_PREVIOUS, only ever used to open. */
export function createSecretBox(key: Buffer, random: Random, previousKeys: readonly Buffer[] = []): SecretBox {
  for (const k of [key, ...previousKeys]) if (k.length !== SECRETS_KEY_BYTES) throw new Error(`SECRETS_KEY must be ${SECRETS_KEY_BYTES} bytes`);
  const current: Key = { id: keyId(key), bytes: key };
  const all: Key[] = [current, ...previousKeys.map((bytes) => ({ id: keyId(bytes), bytes }))];
  return {
    seal(plaintext) {
      const iv = random.bytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return ["v2", current.id, ...[iv, data, cipher.getAuthTag()].map((p) => p.toString("base64url"))].join(".");
    },
    isSealedWithCurrentKey(sealed) {
      return isSealed(sealed) && sealed.startsWith(`v2.${current.id}.`);
    },
    deriveSecret(purpose) {
      return createHmac("sha256", key).update(`latch:${purpose}`).digest("base64url");
    },
    open(sealed) {
      if (!isSealed(sealed)) throw new Error("Malformed sealed secret");
      const parts = sealed.split(".");
      if (parts[0] === "v1") {
        const [, iv, data, tag] = parts as [string, string, string, string];
        return decryptWithAny(all, iv, data, tag);
      }
      const [, kid, iv, data, tag] = parts as [string, string, string, string, string];
      // Normally one key has this id; a (2^-48) collision between configured keys is still opened right.
      return decryptWithAny(
        all.filter((k) => k.id === kid),
        iv,
        data,
        tag,
      );
    },
  };
}

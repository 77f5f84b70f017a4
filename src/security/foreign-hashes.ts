/**
 * Password hashes made by another system (contract.md#d29, decisions.md#importing-members): parsed and
 * checked once at import (format and cost limits), verified at login with their own algorithm until
 * the first successful login replaces them with Argon2id. Every primitive is a library's or
 * node:crypto's: @node-rs/argon2 and @node-rs/bcrypt (Rust, on libuv's thread pool like node:crypto's
 * async forms, so a cost-16 bcrypt verify never holds the event loop), scrypt, PBKDF2 and AES-256-CTR of
 * node:crypto (the callback forms, never *Sync). Derived keys are compared with timingSafeEqual.
 *
 * Stored form (members.password_hash): `foreign:` then the format's own string, so a foreign hash is
 * never mistaken for Latch's own Argon2id and never reaches Latch's hasher. Firebase scrypt hashes
 * name the sealed project parameters they need: `foreign:firebase-scrypt$<paramsId>$<salt>$<hash>`.
 */
import { createCipheriv, pbkdf2, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { verify as argon2Verify } from "@node-rs/argon2";
import { verify as bcryptVerify } from "@node-rs/bcrypt";
import { FOREIGN_HASH_LIMITS } from "../rules.js";

export const FOREIGN_HASH_PREFIX = "foreign:";

export const FOREIGN_FORMATS = ["argon2", "bcrypt", "scrypt", "firebaseScrypt", "pbkdf2Django", "pbkdf2AspNet"] as const;
export type ForeignFormat = (typeof FOREIGN_FORMATS)[number];

/** A Firebase project's hash parameters, as its console shows them (base64 key and separator). */
export interface FirebaseScryptParams {
  signerKey: string;
  saltSeparator: string;
  rounds: number;
  memCost: number;
}

/** Why a hash is refused at import: stable words, reported per member. */
export type ForeignHashRefusal = "unknown_hash_format" | "malformed_hash" | "hash_cost_too_high" | "firebase_params_missing";

export type ParsedForeignHash =
  { ok: true; format: ForeignFormat; stored: (firebaseParamsId: string | undefined) => string } | { ok: false; reason: ForeignHashRefusal };

const B64 = "[A-Za-z0-9+/]+={0,2}";
/** The parameters in any order: the reference writes m,t,p; node-argon2 (the `argon2` package) writes m,p,t. */
const ARGON2 = new RegExp(`^\\$(argon2id|argon2i|argon2d)\\$(?:v=(16|19)\\$)?([mtp]=\\d{1,10},[mtp]=\\d{1,10},[mtp]=\\d{1,10})\\$(${B64})\\$(${B64})$`);
const BCRYPT = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/;
const SCRYPT = new RegExp(`^\\$scrypt\\$ln=(\\d{1,2}),r=(\\d{1,3}),p=(\\d{1,3})\\$(${B64})\\$(${B64})$`);
const FIREBASE = new RegExp(`^firebase-scrypt\\$(${B64})\\$(${B64})$`);
const DJANGO = new RegExp(`^pbkdf2_sha256\\$(\\d{1,10})\\$([^$]{1,128})\\$(${B64})$`);
const ASPNET = new RegExp(`^${B64}$`);
const STORED_FIREBASE = new RegExp(`^firebase-scrypt\\$([A-Za-z0-9_-]{1,64})\\$(${B64})\\$(${B64})$`);
const STORED_ASPNET = "aspnet-identity-v3$";

/** ASP.NET Identity v3's PRF numbers (KeyDerivationPrf): 0 HMACSHA1, 1 HMACSHA256, 2 HMACSHA512. */
const ASPNET_PRFS = ["sha1", "sha256", "sha512"] as const;

const refused = (reason: ForeignHashRefusal): ParsedForeignHash => ({ ok: false, reason });
const accepted = (format: ForeignFormat, original: string): ParsedForeignHash => ({ ok: true, format, stored: () => FOREIGN_HASH_PREFIX + original });

/**
 * Recognises a hash as an export gives it and checks its cost against FOREIGN_HASH_LIMITS, so one
 * row can't stall logins. `firebase` is the import's project parameters (needed for Firebase scrypt).
 */
export function parseForeignHash(hash: string, firebase: FirebaseScryptParams | undefined): ParsedForeignHash {
  const limits = FOREIGN_HASH_LIMITS;
  let m: RegExpExecArray | null;
  if (hash.startsWith("$argon2")) {
    if (!(m = ARGON2.exec(hash))) return refused("malformed_hash");
    const params = new Map(m[3]!.split(",").map((pair) => [pair[0], Number(pair.slice(2))]));
    if (params.size !== 3) return refused("malformed_hash");
    const [memory, time, parallelism] = [params.get("m")!, params.get("t")!, params.get("p")!];
    if (memory < 8 * parallelism || time < 1 || parallelism < 1) return refused("malformed_hash");
    if (memory > limits.argon2MemoryKiB || time > limits.argon2Time || parallelism > limits.argon2Parallelism) return refused("hash_cost_too_high");
    return accepted("argon2", hash);
  }
  if (hash.startsWith("$2")) {
    if (!(m = BCRYPT.exec(hash))) return refused("malformed_hash");
    const cost = Number(m[1]);
    if (cost < 4) return refused("malformed_hash");
    if (cost > limits.bcryptCost) return refused("hash_cost_too_high");
    return accepted("bcrypt", hash);
  }
  if (hash.startsWith("$scrypt$")) {
    if (!(m = SCRYPT.exec(hash))) return refused("malformed_hash");
    const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (ln < 1 || r < 1 || p < 1 || Buffer.from(m[5]!, "base64").length < 16) return refused("malformed_hash");
    if (!scryptWithinLimits(ln, r, p)) return refused("hash_cost_too_high");
    return accepted("scrypt", hash);
  }
  if (hash.startsWith("firebase-scrypt$")) {
    if (!(m = FIREBASE.exec(hash))) return refused("malformed_hash");
    if (!firebase) return refused("firebase_params_missing");
    const salt = m[1]!;
    const derived = m[2]!;
    return { ok: true, format: "firebaseScrypt", stored: (paramsId) => `${FOREIGN_HASH_PREFIX}firebase-scrypt$${paramsId!}$${salt}$${derived}` };
  }
  if (hash.startsWith("pbkdf2_sha256$")) {
    if (!(m = DJANGO.exec(hash))) return refused("malformed_hash");
    const iterations = Number(m[1]);
    if (iterations < 1) return refused("malformed_hash");
    if (iterations > limits.pbkdf2Iterations) return refused("hash_cost_too_high");
    return accepted("pbkdf2Django", hash);
  }
  if (ASPNET.test(hash)) {
    const decoded = decodeAspNet(Buffer.from(hash, "base64"));
    if (decoded === "unknown") return refused("unknown_hash_format");
    if (decoded === "malformed") return refused("malformed_hash");
    if (decoded.iterations > limits.pbkdf2Iterations) return refused("hash_cost_too_high");
    return accepted("pbkdf2AspNet", STORED_ASPNET + hash);
  }
  return refused("unknown_hash_format");
}

/** Firebase parameters are checked once for the whole import, before any member. */
export function checkFirebaseParams(params: FirebaseScryptParams): "ok" | "malformed" | "too_costly" {
  const key = Buffer.from(params.signerKey, "base64");
  const separator = Buffer.from(params.saltSeparator, "base64");
  if (!new RegExp(`^${B64}$`).test(params.signerKey) || key.length < 16) return "malformed";
  if (params.saltSeparator !== "" && (!new RegExp(`^${B64}$`).test(params.saltSeparator) || separator.length === 0)) return "malformed";
  if (!Number.isInteger(params.rounds) || !Number.isInteger(params.memCost) || params.rounds < 1 || params.memCost < 1) return "malformed";
  return scryptWithinLimits(params.memCost, params.rounds, 1) ? "ok" : "too_costly";
}

/** N = 2^ln at most 2^20 (contract.md#d29), and at most scryptMemoryBytes of memory (128·N·r). */
function scryptWithinLimits(ln: number, r: number, p: number): boolean {
  const limits = FOREIGN_HASH_LIMITS;
  return ln <= limits.scryptLogN && p <= limits.scryptParallelism && 128 * 2 ** ln * r <= limits.scryptMemoryBytes;
}

type AspNetHash = { prf: (typeof ASPNET_PRFS)[number]; iterations: number; salt: Buffer; subkey: Buffer };

/** v3 layout: 0x01, PRF (uint32 BE), iterations (uint32 BE), salt length (uint32 BE), salt, subkey. */
function decodeAspNet(bytes: Buffer): AspNetHash | "unknown" | "malformed" {
  if (bytes.length < 13 || bytes[0] !== 0x01) return "unknown";
  const prf = ASPNET_PRFS[bytes.readUInt32BE(1)];
  const iterations = bytes.readUInt32BE(5);
  const saltLength = bytes.readUInt32BE(9);
  if (!prf || iterations < 1 || saltLength < 8 || saltLength > 64 || bytes.length < 13 + saltLength + 16) return "malformed";
  return { prf, iterations, salt: bytes.subarray(13, 13 + saltLength), subkey: bytes.subarray(13 + saltLength) };
}

export function isForeignHash(stored: string): boolean {
  return stored.startsWith(FOREIGN_HASH_PREFIX);
}

/** The params id a stored Firebase hash names, for the caller to load them; undefined for other formats. */
export function firebaseParamsIdOf(stored: string): string | undefined {
  return STORED_FIREBASE.exec(stored.slice(FOREIGN_HASH_PREFIX.length))?.[1];
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function scryptAsync(password: Buffer | string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

function pbkdf2Async(password: string, salt: Buffer | string, iterations: number, keylen: number, digest: string): Promise<Buffer> {
  return new Promise((resolve, reject) => pbkdf2(password, salt, iterations, keylen, digest, (err, key) => (err ? reject(err) : resolve(key))));
}

/** maxmem for node:crypto scrypt: its 128·N·r block plus room, never more than the import limit allowed. */
function scryptOptions(ln: number, r: number, p: number): ScryptOptions {
  const N = 2 ** ln;
  return { N, r, p, maxmem: 128 * N * r * 2 + 1024 * 1024 };
}

/**
 * Verifies `password` (as typed: the old system hashed it without Latch's NFKC) against a stored
 * foreign hash. A hash that no longer parses, or a Firebase hash without its parameters, never
 * authenticates. The limits are checked again, so a row written by hand can't stall a login.
 */
export async function verifyForeignHash(stored: string, password: string, firebase: FirebaseScryptParams | undefined): Promise<boolean> {
  if (!isForeignHash(stored)) return false;
  const hash = stored.slice(FOREIGN_HASH_PREFIX.length);
  try {
    if (hash.startsWith("firebase-scrypt$")) {
      const m = STORED_FIREBASE.exec(hash);
      if (!m || !firebase || checkFirebaseParams(firebase) !== "ok") return false;
      return await verifyFirebase(firebase, m[2]!, m[3]!, password);
    }
    if (hash.startsWith(STORED_ASPNET)) {
      const decoded = decodeAspNet(Buffer.from(hash.slice(STORED_ASPNET.length), "base64"));
      if (typeof decoded === "string" || decoded.iterations > FOREIGN_HASH_LIMITS.pbkdf2Iterations) return false;
      const derived = await pbkdf2Async(password, decoded.salt, decoded.iterations, decoded.subkey.length, decoded.prf);
      return sameBytes(derived, decoded.subkey);
    }
    const parsed = parseForeignHash(hash, undefined);
    if (!parsed.ok) return false;
    switch (parsed.format) {
      case "argon2":
        return await argon2Verify(hash, password);
      case "bcrypt":
        // $2a$, $2b$ and $2y$ (PHP's name for the fixed algorithm) are all read by @node-rs/bcrypt's verifier.
        return await bcryptVerify(password, hash);
      case "scrypt": {
        const m = SCRYPT.exec(hash)!;
        const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
        const expected = Buffer.from(m[5]!, "base64");
        const derived = await scryptAsync(password, Buffer.from(m[4]!, "base64"), expected.length, scryptOptions(ln, r, p));
        return sameBytes(derived, expected);
      }
      case "pbkdf2Django": {
        // Django: base64(PBKDF2-HMAC-SHA256(password, salt as its UTF-8 text, iterations, 32 bytes)).
        const m = DJANGO.exec(hash)!;
        const expected = Buffer.from(m[3]!, "base64");
        const derived = await pbkdf2Async(password, m[2]!, Number(m[1]), 32, "sha256");
        return sameBytes(derived, expected);
      }
      case "firebaseScrypt":
      case "pbkdf2AspNet":
        return false; // their stored forms are read above
    }
  } catch {
    return false; // a malformed stored hash never authenticates
  }
}

/**
 * Firebase's modified scrypt (github.com/firebase/scrypt): key = scrypt(password, salt ‖ saltSeparator,
 * N = 2^memCost, r = rounds, p = 1, 32 bytes); the hash is AES-256-CTR of the project's signer key under
 * that key with a zero IV.
 */
async function verifyFirebase(params: FirebaseScryptParams, salt: string, hash: string, password: string): Promise<boolean> {
  const fullSalt = Buffer.concat([Buffer.from(salt, "base64"), Buffer.from(params.saltSeparator, "base64")]);
  const key = await scryptAsync(password, fullSalt, 32, scryptOptions(params.memCost, params.rounds, 1));
  const cipher = createCipheriv("aes-256-ctr", key, Buffer.alloc(16, 0));
  const derived = Buffer.concat([cipher.update(Buffer.from(params.signerKey, "base64")), cipher.final()]);
  return sameBytes(derived, Buffer.from(hash, "base64"));
}

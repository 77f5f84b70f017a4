/**
 * Password policy (contract.md#spec-5-3, contract.md#d12) and Argon2id hashing with `@node-rs/argon2`
 * (dependencies.md#the-argon2id-binding). Its hash and verify run on libuv's
 * thread pool, never on the event loop; main.ts sizes the pool to the cores. The PHC strings are the
 * standard ones: hashes stored by the earlier `argon2` package verify unchanged (test/units.test.ts).
 */
import { hash, parseOptions, verify, type Algorithm, type Options, type Version } from "@node-rs/argon2";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../rules.js";

export const SALT_BYTES = 32;

export interface Argon2Params {
  memoryCost: number;
  timeCost: number;
  parallelism: number;
}

/** contract.md#d12: m=19456 KiB, t=2, p=1 (the OWASP minimum for Argon2id). */
export const DEFAULT_ARGON2: Argon2Params = { memoryCost: 19456, timeCost: 2, parallelism: 1 };

/** The policy's rule names, stable (docs/decisions.md): `details` of `weak_password` lists the failed ones. */
export const PASSWORD_RULES = ["min_length", "max_length", "uppercase", "lowercase", "number_or_special"] as const;
export type PasswordRule = (typeof PASSWORD_RULES)[number];

/** NFKC so that visually equal passwords typed on different keyboards hash the same. */
export function normalizePassword(password: string): string {
  return password.normalize("NFKC");
}

/** The rules a (normalised) password fails; empty when it passes. Length counts code points. */
export function failedPasswordRules(password: string): PasswordRule[] {
  const failed: PasswordRule[] = [];
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) failed.push("min_length");
  if (length > PASSWORD_MAX_LENGTH) failed.push("max_length");
  if (!/\p{Lu}/u.test(password)) failed.push("uppercase");
  if (!/\p{Ll}/u.test(password)) failed.push("lowercase");
  if (!/[\p{N}\p{P}\p{S}\s]/u.test(password)) failed.push("number_or_special");
  return failed;
}

export interface PasswordHasher {
  /** PHC string; the 32-byte salt is the caller's, so it can also be kept in password_salt. */
  hashPassword(password: string, salt: Buffer): Promise<string>;
  verifyPassword(phc: string, password: string): Promise<boolean>;
  /** Same cost as a real verify, for unknown emails, so login timing reveals nothing. */
  verifyAgainstDummy(password: string): Promise<void>;
  needsRehash(phc: string): boolean;
}

// The binding declares these as `const enum`s, which isolated modules can't read: their values, fixed by its index.d.ts.
const ARGON2ID = 2 as Algorithm;
const VERSION_19 = 1 as Version;

/**
 * Whether a PHC string was made with other parameters than `params` (algorithm, version, m, t, p): the
 * login then stores a new hash. One that can't be parsed needs one too (it never verifies anyway).
 */
export function phcNeedsRehash(phc: string, params: Argon2Params): boolean {
  try {
    const parsed = parseOptions(phc);
    return (
      parsed.algorithm !== ARGON2ID ||
      parsed.version !== VERSION_19 ||
      parsed.memoryCost !== params.memoryCost ||
      parsed.timeCost !== params.timeCost ||
      parsed.parallelism !== params.parallelism
    );
  } catch {
    return true;
  }
}

export function createPasswordHasher(params: Argon2Params = DEFAULT_ARGON2): PasswordHasher {
  const options: Options = { algorithm: ARGON2ID, version: VERSION_19, ...params };
  let dummy: Promise<string> | undefined;
  return {
    hashPassword: (password, salt) => hash(password, { ...options, salt }),
    async verifyPassword(phc, password) {
      try {
        return await verify(phc, password);
      } catch {
        return false; // a malformed stored hash never authenticates
      }
    },
    async verifyAgainstDummy(password) {
      dummy ??= hash("latch-dummy-password", { ...options, salt: Buffer.alloc(SALT_BYTES, 7) });
      await verify(await dummy, password).catch(() => false);
    },
    needsRehash: (phc) => phcNeedsRehash(phc, params),
  };
}

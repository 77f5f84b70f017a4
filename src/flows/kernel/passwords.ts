/** Shared steps for any flow that sets a password: policy, breach check, hashing with a new salt. */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { failedPasswordRules, normalizePassword, SALT_BYTES } from "../../security/password.js";

export interface HashedPassword {
  passwordHash: string;
  passwordSalt: string;
}

/** Policy first (cheap, local), then the breach check (remote); returns the normalised password. */
export async function checkNewPassword(deps: Deps, raw: string): Promise<string> {
  const password = normalizePassword(raw);
  const failed = failedPasswordRules(password);
  if (failed.length > 0) throw new AuthError("weak_password", { details: failed });
  if (await deps.breach.isBreached(password)) throw new AuthError("breached_password");
  return password;
}

/** A fresh 32-byte salt per password (contract.md#spec-2-1); the PHC string carries it too. */
export async function hashNewPassword(deps: Deps, password: string): Promise<HashedPassword> {
  const salt = deps.random.bytes(SALT_BYTES);
  return { passwordHash: await deps.hasher.hashPassword(password, salt), passwordSalt: salt.toString("base64") };
}

/**
 * Checking a password against what a member has stored: Latch's own Argon2id, or a hash imported from
 * another system (contract.md#d29, decisions.md#importing-members), verified with its own algorithm until
 * the first successful login replaces it. Every password check goes through here (login, the current
 * password of change-password, 2FA changes and re-authentication), so none refuses an imported member.
 */
import type { Deps } from "../../deps.js";
import type { Tenant } from "../../model.js";
import { firebaseParamsIdOf, isForeignHash, verifyForeignHash, type FirebaseScryptParams } from "../../security/foreign-hashes.js";
import { normalizePassword } from "../../security/password.js";

/**
 * `password` as the member typed it: Latch's hashes are of its NFKC form (contract.md#d12), a foreign
 * hash of the text the old system was given. A foreign hash whose parameters can't be read never matches.
 */
export async function verifyStoredPassword(deps: Deps, tenant: Tenant, stored: string, password: string): Promise<boolean> {
  if (!isForeignHash(stored)) return deps.hasher.verifyPassword(stored, normalizePassword(password));
  const paramsId = firebaseParamsIdOf(stored);
  const params = paramsId === undefined ? undefined : await loadFirebaseParams(deps, tenant, paramsId);
  return verifyForeignHash(stored, password, params);
}

/**
 * decisions.md#pending-imports: the registration that keeps a pending imported member's old password, one per
 * member. Its id is the record id's, so a verification link that carries no password (a resend) finds it.
 * It never expires on its own: it goes with the account (verification, erasure, the pending sweep).
 */
export function importedRegistrationId(recordId: number): string {
  return `imported-${recordId}`;
}

/** A foreign hash is always replaced after a successful login; Latch's own when its parameters are outdated. */
export function needsNewHash(deps: Deps, stored: string): boolean {
  return isForeignHash(stored) || deps.hasher.needsRehash(stored);
}

async function loadFirebaseParams(deps: Deps, tenant: Tenant, id: string): Promise<FirebaseScryptParams | undefined> {
  const sealed = await deps.store.imports.findHashParams(tenant.id, id);
  if (sealed === undefined) return undefined;
  try {
    return JSON.parse(deps.secrets.open(sealed)) as FirebaseScryptParams;
  } catch (err) {
    deps.log.error({ err, tenant: tenant.domain }, "imported hash parameters can't be opened with any configured key");
    return undefined;
  }
}

/** Issuing one-time tokens (contract.md#spec-2-3, contract.md#d7) and the links that carry them. */
import { MINUTE } from "../../core/clock.js";
import { randomIntBetween, randomToken, type Random } from "../../core/random.js";
import type { Deps, TransactionDeps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { linkPages, type Tenant, type TokenKind } from "../../model.js";
import { loginCodeHash, sha256Hex } from "../../security/hashing.js";
import { parseRecordId } from "../../security/identity.js";
import { LOGIN_CODE_DIGITS, RESET_TOKEN_LIFETIME_MS, TOKEN_LIFETIMES_MS } from "../../rules.js";
import type { Store } from "../../store/index.js";

/** Every kind but the password reset has a fixed lifetime (rules.ts). */
const fixedLifetimes: Partial<Record<TokenKind, number>> = TOKEN_LIFETIMES_MS;

/** contract.md#d26: the code mailed beside a magic link: LOGIN_CODE_DIGITS decimal digits, uniform (rejection sampling), leading zeros kept. */
export function newLoginCode(random: Random): string {
  return String(randomIntBetween(random, 0, 10 ** LOGIN_CODE_DIGITS)).padStart(LOGIN_CODE_DIGITS, "0");
}

export function tokenLifetimeMs(tenant: Tenant, kind: TokenKind): number {
  const fixed = fixedLifetimes[kind];
  if (fixed !== undefined) return fixed;
  const { default: fallback, min, max } = RESET_TOKEN_LIFETIME_MS;
  return Math.min(Math.max(tenant.settings.resetTokenTtlMinutes * MINUTE, min), max) || fallback;
}

export interface IssueOptions {
  /** contract.md#d18: a registration's own verification link, issued beside the account's others, not voiding them. */
  registrationId?: string;
  /** contract.md#d19: for an unknown email, the same rows written already expired (under a member id no one has). */
  dummy?: boolean;
  /** contract.md#d24: the address an email change link confirms, or a "this wasn't me" link restores. */
  newEmail?: string;
  /** contract.md#d24: issued beside the member's other links of the kind, voiding none ("this wasn't me": each alert keeps its own). */
  keepOthers?: boolean;
  /** contract.md#d26: the code mailed with a magic link; its keyed hash goes on the link's row. */
  code?: string;
  /** contract.md#d30: a "this wasn't me" link's place in the member's order (`security_seq`). */
  seq?: number;
}

/**
 * Creates a token inside the caller's transaction, voiding older ones of the kind (contract.md#d7), and returns
 * the link. The link is built from the stored tenant domain, never from a request header (contract.md#d2); only
 * dev mode's own `localhost` tenant links to http://localhost:<port>, this process (src/dev/).
 */
export async function issueOneTimeToken(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  recordId: number,
  kind: TokenKind,
  now: number,
  options: IssueOptions = {},
): Promise<string> {
  const token = randomToken(deps.random, 32);
  const tokenHash = sha256Hex(token);
  const expiresAt = options.dummy ? now : now + tokenLifetimeMs(tenant, kind);
  const extras = {
    newEmail: options.newEmail ?? null,
    codeHash: options.code === undefined ? null : loginCodeHash(deps.subjects, tokenHash, options.code),
    seq: options.seq ?? null,
  };
  if (options.registrationId !== undefined || options.keepOthers)
    await tx.tokens.insertToken(tenant.id, recordId, kind, tokenHash, now, expiresAt, options.registrationId ?? null, extras);
  else await tx.tokens.replaceToken(tenant.id, recordId, kind, tokenHash, now, expiresAt, extras);
  // contract.md#d25: a pending account lives until its last link has been expired for PENDING_RETENTION_DAYS.
  // Run for dummies too (it matches no row then): the worker's statements are the same for every email (contract.md#d19).
  if (kind === "verify_email") await tx.members.extendPending(tenant.id, recordId, expiresAt);
  const base = deps.dev?.linkBaseFor(tenant.domain) ?? `https://${tenant.domain}`;
  return `${base}/${linkPages[kind]}/${recordId}/${token}`;
}

/**
 * The record id and token hash of an emailed link when it is live, peeked and not used up (a
 * refused attempt leaves it valid, contract.md#d15); invalid_token otherwise, before any write lock is taken.
 */
export async function peekLink(
  store: Store,
  tenant: Tenant,
  input: { recordId: string; token: string },
  kind: TokenKind,
  now: number,
): Promise<{ recordId: number; tokenHash: string }> {
  const recordId = parseRecordId(input.recordId);
  const tokenHash = sha256Hex(input.token);
  if (recordId === undefined || !(await store.tokens.isTokenValid(tenant.id, recordId, kind, tokenHash, now))) throw new AuthError("invalid_token");
  return { recordId, tokenHash };
}

/** Whether an emailed link is live, for a page that shows its form only then (a read; nothing is used). */
export async function isLinkLive(
  deps: Pick<Deps, "store" | "clock">,
  tenant: Tenant,
  link: { recordId: string; token: string },
  kind: TokenKind,
): Promise<boolean> {
  try {
    await peekLink(deps.store, tenant, link, kind, deps.clock.now());
    return true;
  } catch (error) {
    if (error instanceof AuthError && error.code === "invalid_token") return false;
    throw error;
  }
}

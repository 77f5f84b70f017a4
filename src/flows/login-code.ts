/**
 * D26: the 6-digit code mailed with every magic link, for a member who reads the email on another
 * device than the browser that asked. It lives on the link's row: the same lifetime, used up with
 * it, and the fifth wrong code deletes the row (link and code both).
 *
 * A code has 20 bits, so guessing is bounded three ways: 5 wrong codes per link, a link per email
 * every 3 minutes (the magic link cooldown), and LOGIN_CODE attempts per email per day counted
 * before the check, whatever the email. Unknown emails, emails without a live link and wrong codes
 * get the same answer after the same statements (against member id 0, which no one has).
 */
import { randomIntBetween } from "../core/random.js";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { RequestContext, Tenant } from "../model.js";
import { constantTimeEqual, loginCodeHash } from "../security/hashing.js";
import { normalizeEmail } from "../security/identity.js";
import { rateRules } from "../security/rate-limit.js";
import { enforceRateLimit, verifyBotChallenge } from "./guards.js";
import { answerMagicLogin, finishMagicLogin, type MagicLinkResult, type MagicLoginOutcome } from "./magic-link.js";

/** D26: the fifth wrong code voids the link and its code. */
export const LOGIN_CODE_MAX_FAILURES = 5;
const NO_MEMBER = 0;
const CODE_MESSAGE = "This code is invalid or has expired.";

/** Six decimal digits, uniform (rejection sampling), leading zeros kept. */
export function newLoginCode(deps: Deps): string {
  return String(randomIntBetween(deps.random, 0, 1_000_000)).padStart(6, "0");
}

export interface VerifyLoginCodeInput {
  email: string;
  code: string;
  botToken: string | undefined;
  twoFACode: string | undefined;
}

export async function verifyLoginCode(deps: Deps, tenant: Tenant, input: VerifyLoginCodeInput, context: RequestContext): Promise<MagicLinkResult> {
  return deps.metrics.countLogin("login_code", () => loginWithCode(deps, tenant, input, context), (result) => result.success);
}

async function loginWithCode(deps: Deps, tenant: Tenant, input: VerifyLoginCodeInput, context: RequestContext): Promise<MagicLinkResult> {
  const now = deps.clock.now();
  const email = normalizeEmail(input.email);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  await enforceRateLimit(deps, tenant, rateRules.loginCodePerIp, context.ip, now);
  await enforceRateLimit(deps, tenant, rateRules.loginCodePerEmail, email, now);
  const known = await deps.store.members.findMemberByEmail(tenant.id, email);
  const recordId = known?.recordId ?? NO_MEMBER;
  const outcome = await deps.store.transaction(async (tx): Promise<MagicLoginOutcome> => {
    // The member's row, then its link's (both locked): concurrent guesses are judged one at a time,
    // so no more than five are ever compared with one code.
    const member = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
    const live = await tx.tokens.findLoginCode(tenant.id, recordId, now);
    const expected = live?.codeHash ?? "";
    const offered = loginCodeHash(deps.subjects, live?.tokenHash ?? "", input.code);
    if (!member || !live || !constantTimeEqual(offered, expected)) {
      await tx.tokens.countLoginCodeFailure(tenant.id, recordId, now, LOGIN_CODE_MAX_FAILURES);
      return { kind: "invalid" };
    }
    // A right code with a missing or wrong second factor leaves the code usable, as the link (D15).
    return finishMagicLogin(tx, deps, tenant, member, live.tokenHash, input.twoFACode, "login_code", context, now);
  });
  if (outcome.kind === "invalid") throw new AuthError("invalid_token", { message: CODE_MESSAGE });
  return answerMagicLogin(deps, tenant, outcome);
}

/**
 * How every login ends, whatever the way in (password, magic link, emailed code, passkey): a
 * session, or the second factor is still to come. The flows return this one shape; each route maps
 * it to the answer its contract fixes (http/login-answers.ts), and the hosted pages read it too.
 */
import type { Tenant } from "../../model.js";
import type { IssuedSession } from "./sessions.js";

export type SignedIn = { kind: "signed_in"; recordId: number; redirect: string; session: IssuedSession };
export type LoginOutcome = SignedIn | { kind: "second_factor_required"; message: string };

/** A session was made; the member goes to the tenant's `loginSuccessRedirect`. */
export function signedIn(tenant: Tenant, recordId: number, session: IssuedSession): SignedIn {
  return { kind: "signed_in", recordId, redirect: tenant.settings.loginSuccessRedirect, session };
}

/** Nothing was made: the same request again, with the second factor, finishes the login. */
export function secondFactorRequired(message: string): LoginOutcome {
  return { kind: "second_factor_required", message };
}

/**
 * Federated sign-in (decisions.md#federated-sign-in): the start redirect and the callback. The flow's
 * state, nonce and PKCE verifier come from the one-use `latch_fed` cookie (security/flow-checks.ts);
 * the store keeps only the cookie's hash, used up by the callback in one statement, so a replayed
 * or second callback finds nothing. openid-client does the protocol; this file decides who the
 * identity is in this tenant (outcomes.ts).
 */
import { randomToken } from "../../core/random.js";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import { UpstreamError, type UpstreamIdentity, type UpstreamSettings } from "../../providers/upstream.js";
import { deriveFlowChecks } from "../../security/flow-checks.js";
import { constantTimeEqual, sha256Hex } from "../../security/hashing.js";
import { FEDERATION_FLOW_LIFETIME_MS, rateRules } from "../../rules.js";
import type { Connection } from "../../store/connections.js";
import type { FlowPurpose } from "../../store/federation.js";
import { enforceRateLimit } from "../kernel/guards.js";
import { connectionRedirectUri } from "./connections.js";
import { decideFederatedIdentity, type FederatedOutcome } from "./outcomes.js";

export type { FederatedOutcome, FederationFailure } from "./outcomes.js";

export interface StartFederation {
  connectionId: string;
  /** A path on the tenant's site (checked by the route), or null for the tenant's loginSuccessRedirect. */
  returnTo: string | null;
  purpose: FlowPurpose;
  /** The signed-in member a `link` is for; 0 for `login`. */
  memberId: number;
  /** A `link`'s session (its SHA-256): only a callback that comes with it can finish the link. */
  sessionHash: string | null;
}

export interface StartedFederation {
  /** The `latch_fed` cookie's value: random, returned once, stored only as its SHA-256. */
  flowCookie: string;
  /** Where the browser goes: the provider's authorization endpoint with state, nonce and PKCE. */
  authorizationUrl: string;
}

/** What openid-client is given for a connection: the secret opened here, at the last moment. */
export function upstreamSettingsOf(deps: Pick<Deps, "secrets">, tenant: Tenant, connection: Connection): UpstreamSettings {
  return {
    cacheKey: `${tenant.id}/${connection.id}/${connection.updatedAt}`,
    kind: connection.type === "github" ? "github" : "oidc",
    issuer: connection.issuer,
    clientId: connection.clientId,
    clientSecret: deps.secrets.open(connection.clientSecretSealed),
    scopes: connection.scopes,
    // Apple answers by form_post whenever a scope is asked, and takes its secret (an ES256 JWT) only in
    // the body (decisions.md#federated-connections).
    ...(connection.type === "apple" ? { responseMode: "form_post" as const, clientAuth: "post" as const } : {}),
  };
}

export async function findConnectionOrThrow(deps: Deps, tenant: Tenant, connectionId: string): Promise<Connection> {
  const connection = await deps.store.connections.findConnection(tenant.id, connectionId);
  if (!connection) throw new AuthError("not_found", { message: "No such connection." });
  return connection;
}

/** Throws AuthError (rate_limited, not_found) or UpstreamError (the provider's discovery failed). */
export async function startFederation(deps: Deps, tenant: Tenant, input: StartFederation, context: RequestContext): Promise<StartedFederation> {
  const now = deps.clock.now();
  await enforceRateLimit(deps, tenant, rateRules.federatedStartPerIp, context.ip, now);
  const connection = await findConnectionOrThrow(deps, tenant, input.connectionId);
  const flowCookie = randomToken(deps.random, 32);
  const url = await deps.upstream.authorizationUrl(
    upstreamSettingsOf(deps, tenant, connection),
    connectionRedirectUri(deps, tenant, connection.id),
    deriveFlowChecks(flowCookie),
  );
  const flow = {
    connectionId: connection.id,
    purpose: input.purpose,
    memberId: input.memberId,
    sessionHash: input.sessionHash,
    returnTo: input.returnTo,
    createdAt: now,
  };
  await deps.store.federation.insertFlow(tenant.id, sha256Hex(flowCookie), flow, now + FEDERATION_FLOW_LIFETIME_MS);
  return { flowCookie, authorizationUrl: url.href };
}

export interface FederationCallback {
  connectionId: string;
  /** The callback URL as the browser sent it (code, state, or the provider's error). */
  callbackUrl: URL;
  flowCookie: string | undefined;
  /** The browser's session cookie, if any: a `link` flow finishes only with the session that started it. */
  sessionCookie: string | undefined;
}

/**
 * The callback: the flow used up first (whatever follows, the cookie is spent), then the code
 * exchanged and the ID token checked by openid-client, then the identity decided in this tenant.
 */
export async function finishFederation(deps: Deps, tenant: Tenant, input: FederationCallback, context: RequestContext): Promise<FederatedOutcome> {
  let outcome: FederatedOutcome;
  try {
    outcome = await finishCallback(deps, tenant, input, context);
  } catch (error) {
    deps.metrics.federatedLoginOutcome("error");
    throw error;
  }
  const counted = countedOutcomeOf(outcome);
  if (counted !== undefined) deps.metrics.federatedLoginOutcome(counted);
  return outcome;
}

/** How `latch_logins_total{method="federated"}` names a callback's outcome (operations.md); a link flow's end is no login. */
function countedOutcomeOf(outcome: FederatedOutcome): string | undefined {
  switch (outcome.kind) {
    case "signed_in":
      return "success";
    case "second_factor":
      return "two_factor_required";
    case "link_required":
      return "link_required";
    case "linked":
      return undefined;
    case "failed":
      return outcome.reason;
  }
}

async function finishCallback(deps: Deps, tenant: Tenant, input: FederationCallback, context: RequestContext): Promise<FederatedOutcome> {
  const now = deps.clock.now();
  if (input.flowCookie === undefined) return { kind: "failed", reason: "no_flow" };
  // A callback whose state is not this cookie's (a cross-site navigation with a forged one) is
  // refused before the flow is used up, so it cannot spend the browser's sign-in in flight.
  const checks = deriveFlowChecks(input.flowCookie);
  if (!constantTimeEqual(input.callbackUrl.searchParams.get("state") ?? "", checks.state)) return { kind: "failed", reason: "invalid_response" };
  const flow = await deps.store.federation.consumeFlow(tenant.id, sha256Hex(input.flowCookie), input.connectionId, now);
  if (!flow) return { kind: "failed", reason: "no_flow" };
  if (flow.purpose === "link" && (input.sessionCookie === undefined || sha256Hex(input.sessionCookie) !== flow.sessionHash)) {
    return { kind: "failed", reason: "no_flow", returnTo: flow.returnTo };
  }
  const connection = await deps.store.connections.findConnection(tenant.id, input.connectionId);
  if (!connection) return { kind: "failed", reason: "no_flow", returnTo: flow.returnTo };
  let identity: UpstreamIdentity;
  try {
    identity = await deps.upstream.identityFromCallback(
      upstreamSettingsOf(deps, tenant, connection),
      connectionRedirectUri(deps, tenant, connection.id),
      input.callbackUrl,
      checks,
    );
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    deps.log.warn({ tenant: tenant.domain, connection: connection.id, reason: error.reason }, "federated sign-in refused by the provider's answer");
    return { kind: "failed", reason: error.reason, returnTo: flow.returnTo };
  }
  return decideFederatedIdentity(deps, tenant, connection, flow, identity, context);
}

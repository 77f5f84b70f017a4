/**
 * decisions.md#federated-sign-in: the state, nonce and PKCE verifier of a federated sign-in are derived
 * from the `latch_fed` cookie's random value by HMAC-SHA256 under a label each, so the store keeps
 * only the cookie's SHA-256 and none of the three. Without the cookie nobody can compute them; with
 * the state (which travels in URLs) nobody can go back to the cookie or the verifier.
 */
import { createHmac } from "node:crypto";

/** What a callback is checked against (providers/upstream.ts sends and checks them through openid-client). */
export interface FlowChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

function derive(cookieValue: string, label: string): string {
  return createHmac("sha256", cookieValue).update(`latch-federation:${label}`).digest("base64url");
}

export function deriveFlowChecks(cookieValue: string): FlowChecks {
  // 43 base64url characters each: the verifier meets RFC 7636's 43-128 unreserved characters.
  return { state: derive(cookieValue, "state"), nonce: derive(cookieValue, "nonce"), codeVerifier: derive(cookieValue, "pkce") };
}

/** The issuer of every token a tenant signs (contract.md#d28): the provider's ID and access tokens and the session token. */
import type { Deps } from "../../deps.js";
import type { Tenant } from "../../model.js";

/**
 * `https://{domain}`; dev mode's own tenant (`localhost`, plain http) is served at dev mode's link
 * base (`http://localhost:{port}`), as its emailed links are.
 */
export function issuerOf(deps: Pick<Deps, "dev">, tenant: Pick<Tenant, "domain">): string {
  return deps.dev?.linkBaseFor(tenant.domain)?.replace(/\/$/, "") ?? `https://${tenant.domain}`;
}

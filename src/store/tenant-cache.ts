/**
 * Tenants by domain, kept in memory for a few seconds: every /auth request resolves its tenant,
 * and the lookup cost as much as the session check itself (docs/performance.md). A settings change
 * made through this instance is seen at once (the flow invalidates); one made through another
 * instance or the CLI is seen within TENANT_CACHE_TTL_MS. Unknown domains are not cached, so a
 * spray of made-up hosts can't fill memory; the cache holds at most TENANT_CACHE_SIZE tenants.
 */
import type { Clock } from "../core/clock.js";
import type { Tenant } from "../model.js";
import { TENANT_CACHE_TTL_MS } from "../rules.js";
import type { TenantStore } from "./tenants.js";

const TENANT_CACHE_SIZE = 10_000;

export class TenantCache {
  private readonly entries = new Map<string, { tenant: Tenant; expiresAt: number }>();

  constructor(
    private readonly tenants: Pick<TenantStore, "findTenantByDomain">,
    private readonly clock: Clock,
  ) {}

  /** The tenant while its entry is fresh, without a promise: the tenant hook's path on every request (docs/performance.md#the-session-check). */
  cached(domain: string): Tenant | undefined {
    const entry = this.entries.get(domain);
    return entry && entry.expiresAt > this.clock.now() ? entry.tenant : undefined;
  }

  async findByDomain(domain: string): Promise<Tenant | undefined> {
    const now = this.clock.now();
    const entry = this.entries.get(domain);
    if (entry && entry.expiresAt > now) return entry.tenant;
    const tenant = await this.tenants.findTenantByDomain(domain);
    this.entries.delete(domain);
    if (tenant) {
      if (this.entries.size >= TENANT_CACHE_SIZE) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(domain, { tenant, expiresAt: now + TENANT_CACHE_TTL_MS });
    }
    return tenant;
  }

  invalidate(domain: string): void {
    this.entries.delete(domain);
  }
}

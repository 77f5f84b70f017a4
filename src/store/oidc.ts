/**
 * decisions.md#openid-provider-storage: oidc-provider's adapter interface
 * (node_modules/oidc-provider/lib/adapters/memory_adapter.js) over oauth.ts, one instance per
 * (tenant, model). Expiry is Latch's clock (deps.clock), so tests move time and the sweep agrees
 * with reads. The library's own consume is check-then-act; `consume` here is the one conditional
 * update that decides, and a loser revokes the family and throws `invalid_grant`.
 *
 * The InvalidGrant error is passed in (`invalidGrant`) rather than imported: the store stays free
 * of oidc-provider (loaded lazily, with its Node-version notice handled, by its own loader), and
 * whoever builds the provider has its `errors` at hand.
 */
import type { Clock } from "../core/clock.js";
import { sha256Hex } from "../security/hashing.js";
import { isForeignKeyViolation } from "./dialects.js";
import type { Store } from "./index.js";
import type { OauthRow } from "./oauth.js";

/** What oidc-provider hands `upsert` and expects back from `find*`. */
export type OidcPayload = Record<string, unknown> & {
  jti?: string;
  grantId?: string;
  uid?: string;
  userCode?: string;
  clientId?: string;
  accountId?: string;
  consumed?: unknown;
};

export type InvalidGrantFactory = (description: string) => Error;

/** A model saved without an expiry (the library always gives one for the models Latch enables) still leaves the table. */
const DEFAULT_EXPIRY_S = 14 * 24 * 60 * 60;

export class OidcAdapter {
  constructor(
    private readonly model: string,
    private readonly tenantId: string,
    /** A function, not the Store: a transaction's or the seam's store is picked at each call. */
    private readonly store: () => Store,
    private readonly clock: Clock,
    private readonly invalidGrant: InvalidGrantFactory,
  ) {}

  /** The factory oidc-provider's `adapter` option wants: `new (model) => adapter`, bound to one tenant. */
  static forTenant(tenantId: string, store: () => Store, clock: Clock, invalidGrant: InvalidGrantFactory): new (model: string) => OidcAdapter {
    return class extends OidcAdapter {
      constructor(model: string) {
        super(model, tenantId, store, clock, invalidGrant);
      }
    };
  }

  async upsert(id: string, payload: OidcPayload, expiresIn?: number): Promise<void> {
    const expiresAt = this.clock.now() + (expiresIn && expiresIn > 0 ? expiresIn : DEFAULT_EXPIRY_S) * 1000;
    // The raw id is a bearer secret (a code, a refresh token, the provider's session cookie): keyed by its hash, and dropped from the stored JSON.
    const { jti: _jti, consumed: _consumed, ...stored } = payload;
    const oauth = this.store().oauth;
    try {
      if (this.model === "Grant") {
        await oauth.upsertGrant(this.tenantId, {
          idHash: sha256Hex(id),
          clientId: String(payload.clientId ?? ""),
          accountId: String(payload.accountId ?? ""),
          expiresAt,
          payload: JSON.stringify(stored),
        });
        return;
      }
      await oauth.upsertArtifact(this.tenantId, {
        model: this.model,
        idHash: sha256Hex(id),
        grantHash: payload.grantId ? sha256Hex(payload.grantId) : null,
        uid: payload.uid ?? null,
        userCodeHash: payload.userCode ? sha256Hex(payload.userCode) : null,
        expiresAt,
        payload: JSON.stringify(stored),
      });
    } catch (error) {
      // The grant was revoked meanwhile (a replay, a logout): a token for it must not be issued.
      if (isForeignKeyViolation(error)) throw this.invalidGrant("grant request is invalid");
      throw error;
    }
  }

  async find(id: string): Promise<OidcPayload | undefined> {
    const now = this.clock.now();
    const oauth = this.store().oauth;
    const row =
      this.model === "Grant"
        ? await oauth.findGrant(this.tenantId, sha256Hex(id), now)
        : await oauth.findArtifact(this.tenantId, this.model, "id_hash", sha256Hex(id), now);
    return row && { ...this.payloadOf(row), jti: id };
  }

  /** Read-only use in the library (the provider's session by its uid): answered without the id, which is not stored. */
  async findByUid(uid: string): Promise<OidcPayload | undefined> {
    const row = await this.store().oauth.findArtifact(this.tenantId, this.model, "uid", uid, this.clock.now());
    return row && this.payloadOf(row);
  }

  async findByUserCode(userCode: string): Promise<OidcPayload | undefined> {
    const row = await this.store().oauth.findArtifact(this.tenantId, this.model, "user_code_hash", sha256Hex(userCode), this.clock.now());
    return row && this.payloadOf(row);
  }

  /**
   * A second use (a code exchanged twice, a refresh token replayed, or the loser of two at once)
   * updates no row: the whole family is revoked and the caller gets `invalid_grant`.
   */
  async consume(id: string): Promise<void> {
    const oauth = this.store().oauth;
    const idHash = sha256Hex(id);
    if (await oauth.consumeArtifact(this.tenantId, this.model, idHash, this.clock.now())) return;
    await oauth.revokeFamilyOf(this.tenantId, this.model, idHash);
    throw this.invalidGrant("grant request is invalid");
  }

  async destroy(id: string): Promise<void> {
    const oauth = this.store().oauth;
    if (this.model === "Grant") await oauth.revokeGrant(this.tenantId, sha256Hex(id));
    else await oauth.deleteArtifact(this.tenantId, this.model, sha256Hex(id));
  }

  /** Every artefact of the grant, whatever its model, and the grant itself. */
  async revokeByGrantId(grantId: string): Promise<void> {
    await this.store().oauth.revokeGrant(this.tenantId, sha256Hex(grantId));
  }

  private payloadOf(row: OauthRow): OidcPayload {
    const payload = JSON.parse(row.payload) as OidcPayload;
    // The library tests `consumed` for truth and compares it to epoch seconds.
    if (row.consumedAt !== null) payload.consumed = Math.floor(row.consumedAt / 1000);
    return payload;
  }
}

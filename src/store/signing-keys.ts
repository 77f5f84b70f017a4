/**
 * decisions.md#openid-provider-signing-keys: a tenant's token signing keys. Every query names the
 * tenant; the private JWK is stored only sealed (the caller seals it) and is never logged. A key is
 * current while `retired_at` is null, and the unique index of migration 0019 allows one current key
 * per tenant and algorithm, so instances racing to make or rotate keys end with one each.
 */
import type { Kysely, Selectable } from "kysely";
import type { SigningAlg } from "../security/signing-keys.js";
import type { Database, OidcSigningKeysTable } from "./schema.js";

export interface StoredSigningKey {
  kid: string;
  alg: SigningAlg;
  privateJwkSealed: string;
  /** The public JWK as the JWKS publishes it. */
  publicJwk: Record<string, unknown>;
  createdAt: number;
  retiredAt: number | null;
  expiresAt: number | null;
}

/** One sealed private key, for `latch secrets reseal`. */
export interface SealedSigningKey {
  kid: string;
  privateJwkSealed: string;
}

function toSigningKey(row: Selectable<OidcSigningKeysTable>): StoredSigningKey {
  return {
    kid: row.kid,
    // Rows are written only from the SigningAlg union (flows/oidc/signing-keys.ts).
    alg: row.alg as SigningAlg,
    privateJwkSealed: row.private_jwk_enc,
    publicJwk: JSON.parse(row.public_jwk) as Record<string, unknown>,
    createdAt: Number(row.created_at),
    retiredAt: row.retired_at === null ? null : Number(row.retired_at),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
  };
}

export class SigningKeyStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Adds a current key; false when the tenant already has a current key of that algorithm (another
   * instance made it first): the caller reads that one instead. Without a conflict target, so the
   * partial unique index answers on SQLite and PostgreSQL alike.
   */
  async insertCurrentKey(tenantId: string, key: Omit<StoredSigningKey, "retiredAt" | "expiresAt">): Promise<boolean> {
    const inserted = await this.db
      .insertInto("oidc_signing_keys")
      .values({
        tenant_id: tenantId,
        kid: key.kid,
        alg: key.alg,
        private_jwk_enc: key.privateJwkSealed,
        public_jwk: JSON.stringify(key.publicJwk),
        created_at: key.createdAt,
        retired_at: null,
        expires_at: null,
      })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  /** The keys that still verify at `now`: current ones first, then retired ones, newest first. */
  async listPublishedKeys(tenantId: string, now: number): Promise<StoredSigningKey[]> {
    const rows = await this.db
      .selectFrom("oidc_signing_keys")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)]))
      .orderBy("created_at", "desc")
      .orderBy("kid")
      .execute();
    const keys = rows.map(toSigningKey);
    return [...keys.filter((k) => k.retiredAt === null), ...keys.filter((k) => k.retiredAt !== null)];
  }

  /** Retires every current key at `now`, kept in the JWKS until `expiresAt`; the keys retired. */
  async retireCurrentKeys(tenantId: string, now: number, expiresAt: number): Promise<StoredSigningKey[]> {
    const rows = await this.db
      .updateTable("oidc_signing_keys")
      .set({ retired_at: now, expires_at: expiresAt })
      .where("tenant_id", "=", tenantId)
      .where("retired_at", "is", null)
      .returningAll()
      .execute();
    return rows.map(toSigningKey);
  }

  /** Forgets retired keys whose last token has expired (Store.sweepExpired). */
  async deleteExpiredKeys(now: number): Promise<void> {
    await this.db.deleteFrom("oidc_signing_keys").where("expires_at", "<=", now).execute();
  }

  /** One page of the tenant's sealed private keys by kid, after `afterKid` (exclusive), for `latch secrets reseal`. */
  async listSealedPrivateKeys(tenantId: string, afterKid: string, limit: number): Promise<SealedSigningKey[]> {
    const rows = await this.db
      .selectFrom("oidc_signing_keys")
      .select(["kid", "private_jwk_enc"])
      .where("tenant_id", "=", tenantId)
      .where("kid", ">", afterKid)
      .orderBy("kid")
      .limit(limit)
      .execute();
    return rows.map((r) => ({ kid: r.kid, privateJwkSealed: r.private_jwk_enc }));
  }

  /** Swaps the sealed private key only if it is still `from` (the sweeper may have deleted it meanwhile). */
  async replaceSealedPrivateKey(tenantId: string, kid: string, from: string, to: string): Promise<boolean> {
    const result = await this.db
      .updateTable("oidc_signing_keys")
      .set({ private_jwk_enc: to })
      .where("tenant_id", "=", tenantId)
      .where("kid", "=", kid)
      .where("private_jwk_enc", "=", from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}

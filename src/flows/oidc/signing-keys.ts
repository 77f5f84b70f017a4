/**
 * decisions.md#openid-provider-signing-keys: each tenant signs its ID and access tokens with keys of
 * its own, one ES256 (the default) and one RS256 (for older clients) at a time. A rotation makes new
 * current keys at once and keeps the old ones in the JWKS for RETIRED_SIGNING_KEY_KEPT_MS (the longest
 * token lifetime, plus the SIGNING_KEY_RECHECK_MS during which a cached provider may still sign with
 * them), so every token they signed verifies until it has expired. Private keys are stored sealed under SECRETS_KEY.
 */
import { SingleFlight } from "../../core/single-flight.js";
import { setMostRecent } from "../../core/lru.js";
import { createLocalJWKSet, importJWK, type JWK } from "jose";
import { toTimestamp } from "../../core/schema.js";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { Tenant } from "../../model.js";
import { RETIRED_SIGNING_KEY_KEPT_MS, SIGNING_KEY_RECHECK_MS } from "../../rules.js";
import { generateSigningKey, SIGNING_ALGS, type SigningAlg } from "../../security/signing-keys.js";
import type { StoredSigningKey } from "../../store/signing-keys.js";

type TenantRef = Pick<Tenant, "id">;

/** Makes the key of each algorithm (generated outside any transaction: RSA is slow) and stores it unless another instance was first. */
async function addCurrentKeys(deps: Deps, tenant: TenantRef, algs: readonly SigningAlg[], now: number): Promise<void> {
  const generated = await Promise.all(algs.map((alg) => generateSigningKey(alg)));
  for (const key of generated) {
    const privateJwkSealed = deps.secrets.seal(JSON.stringify(key.privateJwk));
    await deps.store.signingKeys.insertCurrentKey(tenant.id, { kid: key.kid, alg: key.alg, privateJwkSealed, publicJwk: key.publicJwk, createdAt: now });
  }
}

function missingAlgs(keys: StoredSigningKey[]): SigningAlg[] {
  return SIGNING_ALGS.filter((alg) => !keys.some((k) => k.alg === alg && k.retiredAt === null));
}

/** The key generations under way in this process, per app and tenant (ensureSigningKeys). */
const generating = new WeakMap<Deps, SingleFlight<StoredSigningKey[]>>();

/**
 * The tenant's keys that still verify, current ones first; makes the current ES256 and RS256 keys
 * the first time. Requests that arrive together on one instance wait for one generation (an RSA
 * key costs tens of milliseconds of CPU: twenty first requests each making their own stalled the
 * process for seconds). Two instances at once each generate a pair, the unique index keeps one per
 * algorithm, and both return the keys that were kept.
 */
export async function ensureSigningKeys(deps: Deps, tenant: TenantRef): Promise<StoredSigningKey[]> {
  const now = deps.clock.now();
  const keys = await deps.store.signingKeys.listPublishedKeys(tenant.id, now);
  const missing = missingAlgs(keys);
  if (missing.length === 0) return keys;
  let inProcess = generating.get(deps);
  if (inProcess === undefined) generating.set(deps, (inProcess = new SingleFlight()));
  return inProcess.run(tenant.id, async () => {
    await addCurrentKeys(deps, tenant, missing, now);
    return deps.store.signingKeys.listPublishedKeys(tenant.id, now);
  });
}

/**
 * The private JWKs for oidc-provider's `jwks` option: the library signs with the first key of each
 * algorithm, so the current ones come first; retired ones follow so it still recognises their kids.
 */
export async function signingKeySet(deps: Deps, tenant: TenantRef): Promise<{ keys: JWK[] }> {
  const keys = await ensureSigningKeys(deps, tenant);
  return { keys: keys.map((k) => JSON.parse(deps.secrets.open(k.privateJwkSealed)) as JWK) };
}

/** The public JWKS: current keys and retired ones whose tokens may not have expired yet. Never a private part. */
export async function publicJwks(deps: Deps, tenant: TenantRef): Promise<{ keys: JWK[] }> {
  const keys = await ensureSigningKeys(deps, tenant);
  return { keys: keys.map((k) => k.publicJwk as JWK) };
}

export interface SigningKeyView {
  kid: string;
  alg: SigningAlg;
  createdAt: string;
}

export interface RotatedSigningKeys {
  domain: string;
  /** The keys that sign from now on. */
  keys: SigningKeyView[];
  /** The keys replaced, still in the JWKS until `expiresAt` (docs/api-conventions.md#times). */
  retiredKeys: (SigningKeyView & { expiresAt: string })[];
}

/**
 * `latch tenant rotate-signing-key`: new current keys at once, the current ones retired and kept
 * until the longest token they signed has expired. Retiring and adding happen in one transaction, so
 * no instance ever finds the tenant without a current key; keys are generated before it.
 */
export async function rotateSigningKeys(deps: Deps, tenant: TenantRef): Promise<{ current: StoredSigningKey[]; retired: StoredSigningKey[] }> {
  const now = deps.clock.now();
  const generated = await Promise.all(SIGNING_ALGS.map((alg) => generateSigningKey(alg)));
  const sealed = generated.map((key) => ({ ...key, privateJwkSealed: deps.secrets.seal(JSON.stringify(key.privateJwk)), createdAt: now }));
  const retired = await deps.store.transaction(async (tx) => {
    const old = await tx.signingKeys.retireCurrentKeys(tenant.id, now, now + RETIRED_SIGNING_KEY_KEPT_MS);
    for (const key of sealed) {
      await tx.signingKeys.insertCurrentKey(tenant.id, {
        kid: key.kid,
        alg: key.alg,
        privateJwkSealed: key.privateJwkSealed,
        publicJwk: key.publicJwk,
        createdAt: now,
      });
    }
    return old;
  });
  // A rotation racing this one may have won an algorithm: the keys current now are the answer.
  const current = (await deps.store.signingKeys.listPublishedKeys(tenant.id, now)).filter((k) => k.retiredAt === null);
  return { current, retired };
}

/** The answer of `latch tenant rotate-signing-key <domain>`: kids and times, never key material. */
export async function rotateTenantSigningKeys(deps: Deps, domain: string): Promise<RotatedSigningKeys> {
  // As tenants.ts's findTenantOrThrow: a slice does not import another slice (test/architecture.test.ts).
  const tenant = await deps.store.tenants.findTenantByDomain(domain.trim().toLowerCase());
  if (!tenant) throw new AuthError("unknown_tenant");
  const { current, retired } = await rotateSigningKeys(deps, tenant);
  const view = (k: StoredSigningKey): SigningKeyView => ({ kid: k.kid, alg: k.alg, createdAt: toTimestamp(k.createdAt) });
  return {
    domain: tenant.domain,
    keys: current.map(view),
    retiredKeys: retired.map((k) => ({ ...view(k), expiresAt: toTimestamp(k.expiresAt ?? k.createdAt) })),
  };
}

/** A private key as jose imports it, ready to sign. */
type ImportedKey = Awaited<ReturnType<typeof importJWK>>;

/** As many tenants' key sets as the providers (decisions.md#openid-provider): the least recently used are dropped. */
export const MAX_CACHED_KEY_SETS = 1000;

/**
 * One tenant's keys as read from the store at `checkedAt`: the public set to verify with and, made on
 * first use, the current key of an algorithm imported for signing.
 */
export class TenantKeySet {
  readonly kids: string;
  readonly verifyKey: ReturnType<typeof createLocalJWKSet>;
  private readonly imported = new Map<SigningAlg, Promise<{ kid: string; key: ImportedKey }>>();

  constructor(
    private readonly deps: Deps,
    readonly keys: StoredSigningKey[],
    public checkedAt: number,
  ) {
    this.kids = keys.map((k) => k.kid).join(",");
    this.verifyKey = createLocalJWKSet({ keys: keys.map((k) => k.publicJwk as JWK) });
  }

  has(kid: string): boolean {
    return this.keys.some((k) => k.kid === kid);
  }

  /** The current key of `alg`, its private JWK opened and imported once for this set. */
  signingKey(alg: SigningAlg): Promise<{ kid: string; key: ImportedKey }> {
    let pending = this.imported.get(alg);
    if (!pending) {
      const stored = this.keys.find((k) => k.alg === alg && k.retiredAt === null);
      if (!stored) return Promise.reject(new Error(`the tenant has no current ${alg} signing key`));
      pending = importJWK(JSON.parse(this.deps.secrets.open(stored.privateJwkSealed)) as JWK, alg).then((key) => ({ kid: stored.kid, key }));
      this.imported.set(alg, pending);
    }
    return pending;
  }
}

/**
 * decisions.md#openid-provider-signing-keys: the tenants' key sets of one app, for what Latch signs and
 * verifies itself (session tokens, access tokens at userinfo and introspection). As a cached provider, a
 * set asks the store for the tenant's published kids at most every SIGNING_KEY_RECHECK_MS and is made
 * again when they changed. A token naming a kid the set lacks (signed on another instance just after a
 * rotation) makes it read the store at once; reads of one tenant at the same time share one.
 */
export class SigningKeyCache {
  private readonly entries = new Map<string, TenantKeySet>();
  private readonly loading = new SingleFlight<TenantKeySet>();

  constructor(
    private readonly deps: Deps,
    private readonly max = MAX_CACHED_KEY_SETS,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The tenant's keys, read again when SIGNING_KEY_RECHECK_MS has passed, or at once with `recheck` (an unknown kid). */
  async forTenant(tenant: TenantRef, options: { recheck?: boolean } = {}): Promise<TenantKeySet> {
    const cached = this.entries.get(tenant.id);
    if (cached) {
      setMostRecent(this.entries, tenant.id, cached, this.max);
      if (!options.recheck && this.deps.clock.now() - cached.checkedAt < SIGNING_KEY_RECHECK_MS) return cached;
    }
    return this.loading.run(tenant.id, () => this.load(tenant));
  }

  private async load(tenant: TenantRef): Promise<TenantKeySet> {
    // As of before the read: the next recheck is counted from here.
    const readAt = this.deps.clock.now();
    const keys = await ensureSigningKeys(this.deps, tenant);
    const cached = this.entries.get(tenant.id);
    let entry: TenantKeySet;
    if (cached && cached.kids === keys.map((k) => k.kid).join(",")) {
      cached.checkedAt = readAt;
      entry = cached;
    } else {
      entry = new TenantKeySet(this.deps, keys, readAt);
    }
    setMostRecent(this.entries, tenant.id, entry, this.max);
    return entry;
  }
}

const keyCaches = new WeakMap<Deps, SigningKeyCache>();

/** One key cache per app's Deps (the session token, userinfo and introspection share it). */
export function signingKeyCache(deps: Deps): SigningKeyCache {
  let cache = keyCaches.get(deps);
  if (!cache) {
    cache = new SigningKeyCache(deps);
    keyCaches.set(deps, cache);
  }
  return cache;
}

/**
 * `latch secrets reseal`: after a SECRETS_KEY rotation, seals every stored secret again under the
 * current key, so the previous key can be dropped. Batched by tenant and by page; idempotent (a value
 * already under the current key is left alone); a value no configured key opens is counted, reported
 * and left in place, never deleted. Each swap is conditional on the value read, so a change made
 * meanwhile by a running instance (a rotated webhook secret, a finished delivery) is never overwritten.
 */
import type { Deps } from "../deps.js";
import { isSealed } from "../security/secret-box.js";

const PAGE = 100;

export interface ResealCounts {
  /** Opened with a previous key (or as a v1 value) and written back under the current key. */
  resealed: number;
  /** Already under the current key: nothing to do. */
  current: number;
  /** No configured key opens it: left as it is. */
  unreadable: number;
  /** Changed by someone else between the read and the write (e.g. a delivery finished): left to them. */
  changedMeanwhile: number;
}

export type ResealKind =
  | "webhookSecrets"
  | "previousWebhookSecrets"
  | "botSecrets"
  | "totpSecrets"
  | "pendingTotpSecrets"
  | "outboxPayloads"
  | "connectionSecrets"
  | "signingKeys"
  | "importedHashParams";
export type ResealReport = Record<ResealKind, ResealCounts>;

type Swap = (from: string, to: string) => Promise<boolean>;

/** Re-seals every sealed value under the current key; the report holds counts only, never values. */
export async function resealSecrets(deps: Deps): Promise<ResealReport> {
  const report = emptyReport();
  const reseal = async (kind: ResealKind, sealed: string, swap: Swap): Promise<void> => {
    report[kind][await resealValue(deps, sealed, swap)] += 1;
  };
  const { tenants, twoFactor, outbox, connections, signingKeys, imports } = deps.store;
  await forEachRow(
    "",
    (after) => tenants.listTenantSecrets(after, PAGE),
    (t) => t.tenantId,
    async (tenant) => {
      const id = tenant.tenantId;
      await reseal("webhookSecrets", tenant.webhookSecretEnc, (from, to) => tenants.replaceSealedWebhookSecret(id, from, to));
      // The secret before the last rotation signs until its window ends (decisions.md#webhook-secret-rotation);
      // one the sweeper has not yet cleared after its window is resealed too, as every stored value is.
      if (tenant.previousWebhookSecretEnc !== null) {
        await reseal("previousWebhookSecrets", tenant.previousWebhookSecretEnc, (from, to) => tenants.replaceSealedPreviousWebhookSecret(id, from, to));
      }
      // A bot secret stored in the clear by an older version is sealed at server start, not here.
      if (tenant.botSecretKey !== undefined && isSealed(tenant.botSecretKey)) {
        await reseal("botSecrets", tenant.botSecretKey, (from, to) => tenants.replaceSealedBotSecret(id, from, to));
      }
      await forEachRow(
        0,
        (after) => twoFactor.listSealedTotpSecrets(id, after, PAGE),
        (m) => m.memberId,
        async (member) => {
          const { memberId, secretEnc, pendingSecretEnc } = member;
          if (secretEnc !== null) await reseal("totpSecrets", secretEnc, (from, to) => twoFactor.replaceSealedTotpSecret(id, memberId, "active", from, to));
          if (pendingSecretEnc !== null)
            await reseal("pendingTotpSecrets", pendingSecretEnc, (from, to) => twoFactor.replaceSealedTotpSecret(id, memberId, "pending", from, to));
        },
      );
      await forEachRow(
        "",
        (after) => outbox.listSealedPayloads(id, after, PAGE),
        (d) => d.id,
        async (delivery) => {
          await reseal("outboxPayloads", delivery.payloadEnc, (from, to) => outbox.replaceSealedPayload(id, delivery.id, from, to));
        },
      );
      // decisions.md#federated-connections: each connection's client secret; an admin's new secret meanwhile wins.
      await forEachRow(
        "",
        (after) => connections.listSealedClientSecrets(id, after, PAGE),
        (c) => c.id,
        async (connection) => {
          await reseal("connectionSecrets", connection.clientSecretSealed, (from, to) => connections.replaceSealedClientSecret(id, connection.id, from, to));
        },
      );
      // decisions.md#openid-provider-signing-keys: current and retired private keys alike; one swept meanwhile is left to the sweeper.
      await forEachRow(
        "",
        (after) => signingKeys.listSealedPrivateKeys(id, after, PAGE),
        (k) => k.kid,
        async (key) => {
          await reseal("signingKeys", key.privateJwkSealed, (from, to) => signingKeys.replaceSealedPrivateKey(id, key.kid, from, to));
        },
      );
      // decisions.md#importing-members: a Firebase project's parameters (its signer key) for imported hashes.
      await forEachRow(
        "",
        (after) => imports.listSealedHashParams(id, after, PAGE),
        (p) => p.id,
        async (params) => {
          await reseal("importedHashParams", params.paramsSealed, (from, to) => imports.replaceSealedHashParams(id, params.id, from, to));
        },
      );
    },
  );
  return report;
}

/** Visits every row page by page (keyset paging): each page starts after the last row of the one before. */
async function forEachRow<T, K>(start: K, fetchPage: (after: K) => Promise<T[]>, keyOf: (row: T) => K, visit: (row: T) => Promise<void>): Promise<void> {
  let after = start;
  for (;;) {
    const page = await fetchPage(after);
    for (const row of page) await visit(row);
    const last = page[page.length - 1];
    if (last === undefined || page.length < PAGE) return;
    after = keyOf(last);
  }
}

async function resealValue(deps: Deps, sealed: string, swap: Swap): Promise<keyof ResealCounts> {
  if (deps.secrets.isSealedWithCurrentKey(sealed)) return "current";
  let plaintext: string;
  try {
    plaintext = deps.secrets.open(sealed);
  } catch {
    return "unreadable";
  }
  return (await swap(sealed, deps.secrets.seal(plaintext))) ? "resealed" : "changedMeanwhile";
}

function emptyReport(): ResealReport {
  const counts = (): ResealCounts => ({ resealed: 0, current: 0, unreadable: 0, changedMeanwhile: 0 });
  return {
    webhookSecrets: counts(),
    previousWebhookSecrets: counts(),
    botSecrets: counts(),
    totpSecrets: counts(),
    pendingTotpSecrets: counts(),
    outboxPayloads: counts(),
    connectionSecrets: counts(),
    signingKeys: counts(),
    importedHashParams: counts(),
  };
}

/** True when something could not be opened: the CLI then exits non-zero. */
export function hasUnreadable(report: ResealReport): boolean {
  return Object.values(report).some((counts) => counts.unreadable > 0);
}

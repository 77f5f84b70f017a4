/**
 * `latch import --tenant DOMAIN FILE [--dry-run] [--firebase-scrypt PARAMS.json]` (contract.md#d29,
 * decisions.md#importing-members): a file of JSON lines, one member a line, imported in batches of
 * IMPORT_MAX_MEMBERS through the same flow as `POST /auth/admin/members/import` (one transaction per
 * batch). The file is read as a stream, so its size is bounded by the disk, not by memory. Refusals
 * name the line (from 1); blank lines are ignored. A progress line goes to stderr after each batch of
 * a file longer than one batch. The answer on stdout: `imported`, `skipped`, `refused`, `formats`.
 */
import { createReadStream, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Deps } from "../deps.js";
import { emptyImportReport, importMembers, type ImportRefusal, type ImportReport } from "../flows/admin/import.js";
import { AuthError } from "../errors.js";
import { IMPORT_MAX_MEMBERS } from "../rules.js";
import type { FirebaseScryptParams } from "../security/foreign-hashes.js";
import { UsageError } from "./usage.js";

export const IMPORT_USAGE = `  latch import --tenant <domain> <file.jsonl> [--dry-run] [--firebase-scrypt <params.json>]
      (one member a line: {"email", "emailVerified", "passwordHash"?, "name"?, "createdAt"?, "externalId"?, "totpSecret"?})`;

export const IMPORT_OPTIONS = {
  "dry-run": { type: "boolean" },
  "firebase-scrypt": { type: "string" },
} as const;

/** The CLI's answer: the API's, with `index` the line number and one more reason for a line that is not JSON. */
export interface ImportFileReport extends Omit<ImportReport, "refused"> {
  dryRun: boolean;
  refused: { index: number; reason: ImportRefusal | "invalid_json" }[];
}

/** The Firebase console's names (`base64_signer_key`…) or the API's (`signerKey`…). */
export function readFirebaseParams(path: string): FirebaseScryptParams {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw new UsageError("the --firebase-scrypt file is not JSON", "--firebase-scrypt");
  }
  const o = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const params = {
    signerKey: o.signerKey ?? o.base64_signer_key,
    saltSeparator: o.saltSeparator ?? o.base64_salt_separator,
    rounds: typeof o.rounds === "string" ? Number(o.rounds) : o.rounds,
    memCost: o.memCost ?? (typeof o.mem_cost === "string" ? Number(o.mem_cost) : o.mem_cost),
  };
  if (
    typeof params.signerKey !== "string" ||
    typeof params.saltSeparator !== "string" ||
    typeof params.rounds !== "number" ||
    typeof params.memCost !== "number"
  ) {
    throw new UsageError("the --firebase-scrypt file needs signerKey, saltSeparator (base64), rounds and memCost", "--firebase-scrypt");
  }
  return params as FirebaseScryptParams;
}

export async function runImportCommand(
  deps: Deps,
  file: string | undefined,
  values: { tenant?: string; "dry-run"?: boolean; "firebase-scrypt"?: string },
  progress: (line: string) => void,
): Promise<ImportFileReport> {
  if (!values.tenant) throw new UsageError("--tenant is required", "--tenant");
  if (!file) throw new UsageError("<file> is required", "<file>");
  const tenant = await deps.store.tenants.findTenantByDomain(values.tenant.trim().toLowerCase());
  if (!tenant) throw new AuthError("not_found", { message: "No tenant has this domain." });
  const firebaseScrypt = values["firebase-scrypt"] === undefined ? undefined : readFirebaseParams(values["firebase-scrypt"]);
  const dryRun = values["dry-run"] === true;
  const context = { ip: "", userAgent: "latch import" };
  const total: ImportFileReport = { ...emptyImportReport(), dryRun, refused: [] };

  let batch: { line: number; member: unknown }[] = [];
  let linesRead = 0;
  let batches = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const lines = batch.map((b) => b.line);
    const report = await importMembers(deps, tenant, { members: batch.map((b) => b.member), firebaseScrypt, dryRun }, context);
    total.imported += report.imported;
    total.skipped += report.skipped;
    for (const r of report.refused) total.refused.push({ index: lines[r.index]!, reason: r.reason });
    for (const [format, n] of Object.entries(report.formats)) total.formats[format as keyof ImportReport["formats"]] += n;
    batch = [];
    batches += 1;
    if (batches > 1 || linesRead > IMPORT_MAX_MEMBERS) {
      progress(
        `latch import: ${linesRead} lines read, ${total.imported} ${dryRun ? "to import" : "imported"}, ${total.skipped} skipped, ${total.refused.length} refused`,
      );
    }
  };

  const input = createInterface({ input: createReadStream(file, "utf8"), crlfDelay: Infinity });
  for await (const text of input) {
    linesRead += 1;
    if (text.trim() === "") continue;
    let member: unknown;
    try {
      member = JSON.parse(text);
    } catch {
      total.refused.push({ index: linesRead, reason: "invalid_json" });
      continue;
    }
    batch.push({ line: linesRead, member });
    if (batch.length === IMPORT_MAX_MEMBERS) await flush();
  }
  await flush();
  total.refused.sort((a, b) => a.index - b.index);
  return total;
}

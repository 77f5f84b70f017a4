#!/usr/bin/env node
/**
 * The operator CLI (contract.md#d3, contract.md#d23): `latch tenant list|create|show|update|delete|rotate-key|rotate-webhook-secret|rotate-signing-key|deliveries`,
 * `latch connection add|list|update|remove` (decisions.md#federated-connections),
 * `latch oauth-client add|list|show|update|remove` (decisions.md#openid-provider-clients),
 * `latch import` (contract.md#d29), `latch secrets reseal` and `latch migrate`. It calls the same functions as the operator API, on the configured database.
 * stdout carries the result as JSON and nothing else (contract.md#d23), so `latch … | jq` works: for every command
 * it is the object the operator API answers for the same call. Every failure is the contract.md#d4 error body
 * (success, code, message, details) on one line of stderr (docs/api-conventions.md#cli), with exit 1, or 2 for a
 * usage error; `--help` and logs go to stderr too.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import pino from "pino";
import { ConfigError, loadConfig, StartError } from "../config.js";
import { createDeps } from "../create-deps.js";
import type { Deps } from "../deps.js";
import { AuthError, isAuthError, type ErrorCode, type ErrorDetails } from "../errors.js";
import { isStorageUnavailable } from "../http/errors.js";
import {
  createTenant,
  deleteTenant,
  listTenants,
  listWebhookDeliveries,
  rotateApplicationKey,
  rotateWebhookSecret,
  showTenant,
  updateTenantSettings,
} from "../flows/tenants/tenants.js";
import { rotateTenantSigningKeys } from "../flows/oidc/signing-keys.js";
import { createLogger } from "../logging.js";
import { describeDuration, RETIRED_SIGNING_KEY_KEPT_MS, WEBHOOK_SECRET_ROTATION_WINDOW_MS } from "../rules.js";
import { checkDatabaseLocation } from "../start-up.js";
import { CONNECTION_OPTIONS, CONNECTION_USAGE, refuseSecretOnCommandLine, runConnectionCommand, type ConnectionValues } from "./connections.js";
import { IMPORT_OPTIONS, IMPORT_USAGE, runImportCommand } from "./import.js";
import { OAUTH_CLIENT_OPTIONS, OAUTH_CLIENT_USAGE, runOauthClientCommand, type OauthClientValues } from "./oauth-clients.js";
import { hasUnreadable, resealSecrets } from "./reseal.js";
import { databaseLine, databaseNameOf } from "./database.js";
import { describeJsonProblem, parseJsonText } from "./json-text.js";
import { need, UsageError } from "./usage.js";

const USAGE = `Usage:
  latch tenant list [--limit <n>] [--cursor <nextCursor>]
  latch tenant create --domain <host> (--settings '<json>' | --settings-file <path>) [--application-id <id>]
  latch tenant show <domain>
  latch tenant update <domain> (--settings '<json>' | --settings-file <path>)
  latch tenant delete <domain> --confirm <domain>
  latch tenant rotate-key <applicationId>
  latch tenant rotate-webhook-secret <domain>
      (the old secret signs too for ${describeDuration(WEBHOOK_SECRET_ROTATION_WINDOW_MS)}, until the answer's previousSecretExpiresAt)
  latch tenant rotate-signing-key <domain>
      (new token signing keys at once; the old ones stay in the JWKS for ${describeDuration(RETIRED_SIGNING_KEY_KEPT_MS)}, until the answer's retiredKeys[].expiresAt)
  latch tenant deliveries <domain> [--limit <n>]
${CONNECTION_USAGE}
${OAUTH_CLIENT_USAGE}
${IMPORT_USAGE}
  latch secrets reseal
  latch migrate
Configuration comes from the environment (DATABASE_URL, SECRETS_KEY, ...), as for the server.
DATABASE_URL defaults to sqlite:./data/latch.db; dev mode's database is sqlite:./data/dev.db.
The result is JSON on stdout and nothing else; this text, errors (the API's error body, one line) and logs go to stderr.`;

type Values = ConnectionValues & {
  domain?: string;
  settings?: string;
  "settings-file"?: string;
  "application-id"?: string;
  confirm?: string;
  limit?: string;
  cursor?: string;
  help?: boolean;
  "dry-run"?: boolean;
  "firebase-scrypt"?: string;
} & OauthClientValues;

/**
 * The settings as a JSON object. Malformed JSON says where (docs/operations.md#cli-settings-errors), never
 * the text: settings may hold a bot `secretKey`. The option named is the one the text came from.
 */
function settingsFrom(values: Values): unknown {
  const option = values["settings-file"] !== undefined ? "--settings-file" : "--settings";
  const text = values["settings-file"] !== undefined ? readSettingsFile(values["settings-file"]) : values.settings;
  if (text === undefined) throw new UsageError("--settings or --settings-file is required");
  const parsed = parseJsonText(text);
  if (!parsed.ok) throw new UsageError(`${option} is not valid JSON ${describeJsonProblem(parsed.problem)}`, option);
  if (typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value))
    throw new UsageError(
      `${option} must be a JSON object ({"sessionTier": "7d", …}), not ${Array.isArray(parsed.value) ? "an array" : describeJsonValue(parsed.value)}`,
      option,
    );
  return parsed.value;
}

function readSettingsFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new UsageError(`--settings-file: cannot read ${path} (${(err as { code?: string }).code ?? "unreadable"})`, "--settings-file");
  }
}

function describeJsonValue(value: unknown): string {
  return value === null ? "null" : typeof value === "string" ? "a string" : `a ${typeof value}`;
}

function limitOf(values: Values): number | undefined {
  if (values.limit === undefined) return undefined;
  if (!/^[0-9]{1,3}$/.test(values.limit)) throw new UsageError("--limit must be a number", "--limit");
  return Number(values.limit);
}

/**
 * The flows' refusals speak to a member ("This site is not known to the authentication service."); the
 * operator needs what was looked for, where, and how to see what is there (docs/operations.md#which-database-the-cli-uses).
 * The code stays the API's.
 */
function inOperatorTerms(err: unknown, database: string, group: string, command: string | undefined, arg: string | undefined, values: Values): unknown {
  if (!isAuthError(err)) return err;
  const domain = (group === "tenant" ? arg : values.tenant)?.trim().toLowerCase();
  if (err.code === "unknown_tenant" && domain) {
    return new AuthError("unknown_tenant", { message: `No tenant with domain ${domain} in ${database}; list them with \`latch tenant list\`.` });
  }
  const applicationId = command === "rotate-key" ? arg : command === "create" ? values["application-id"] : undefined;
  if (err.code === "not_found" && group === "tenant" && applicationId) {
    return new AuthError("not_found", {
      message: `No application ${applicationId} in ${database}; \`latch tenant list\` shows each tenant's applicationId.`,
    });
  }
  return err;
}

/**
 * A validation failure's message with its issues in words ("settings.sessionTier must be one of: …"):
 * one line an operator reads without unpacking `details` (docs/operations.md#cli-settings-errors).
 */
function withIssues(message: string, details: ErrorDetails | undefined): string {
  const issues = (details ?? []).flatMap((detail) => (typeof detail === "string" ? [] : [`${detail.field || "the input"} ${detail.message}`]));
  return issues.length === 0 ? message : `${message.replace(/\.$/, "")}: ${issues.join("; ")}.`;
}

/** The contract.md#d4 body, without a requestId (there is no request), on one line of stderr. */
function writeError(code: ErrorCode, message: string, details?: ErrorDetails): void {
  process.stderr.write(`${JSON.stringify({ success: false, code, message, ...(details !== undefined && { details }) })}\n`);
}

async function runTenantCommand(deps: Deps, command: string | undefined, arg: string | undefined, values: Values): Promise<unknown> {
  switch (command) {
    case "list":
      return listTenants(deps, { limit: limitOf(values), cursor: values.cursor });
    case "delete":
      return deleteTenant(deps, need(arg, "<domain>"), need(values.confirm, "--confirm <domain>"));
    case "create":
      return createTenant(deps, { domain: need(values.domain, "--domain"), applicationId: values["application-id"], settings: settingsFrom(values) as never });
    case "show":
      return showTenant(deps, need(arg, "<domain>"));
    case "update":
      return updateTenantSettings(deps, need(arg, "<domain>"), settingsFrom(values) as never);
    case "rotate-key":
      return rotateApplicationKey(deps, need(arg, "<applicationId>"));
    case "rotate-webhook-secret":
      return rotateWebhookSecret(deps, need(arg, "<domain>"));
    case "rotate-signing-key":
      return rotateTenantSigningKeys(deps, need(arg, "<domain>"));
    case "deliveries":
      return listWebhookDeliveries(deps, need(arg, "<domain>"), limitOf(values));
    case undefined: // `latch tenant` alone
    default:
      throw new UsageError(`unknown tenant command: ${command ?? "(none)"}`);
  }
}

async function runGroupCommand(deps: Deps, group: string, command: string | undefined, arg: string | undefined, values: Values): Promise<unknown> {
  if (group === "tenant") return runTenantCommand(deps, command, arg, values);
  if (group === "connection") return runConnectionCommand(deps, command, arg, values);
  if (group === "oauth-client") return runOauthClientCommand(deps, command, arg, values);
  throw new UsageError(`unknown command: ${group}`);
}

/** Prints counts per kind, never a value; exits 1 when something could not be opened. */
async function runSecretsCommand(deps: Deps, command: string | undefined): Promise<number> {
  if (command !== "reseal") throw new UsageError(`unknown secrets command: ${command ?? "(none)"}`);
  const report = await resealSecrets(deps);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (!hasUnreadable(report)) return 0;
  writeError("invalid_state", 'Some sealed values open with neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS; they were left in place (see "unreadable").');
  return 1;
}

function parseCommandLine(argv: string[]): { values: Values; positionals: string[] } | undefined {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        domain: { type: "string" },
        settings: { type: "string" },
        "settings-file": { type: "string" },
        "application-id": { type: "string" },
        confirm: { type: "string" },
        limit: { type: "string" },
        cursor: { type: "string" },
        help: { type: "boolean", short: "h" },
        ...CONNECTION_OPTIONS,
        ...OAUTH_CLIENT_OPTIONS,
        ...IMPORT_OPTIONS,
      },
    });
  } catch (err) {
    // An unknown or incomplete option: a usage error, not a stack trace.
    writeError("validation_failed", `${(err as Error).message}; \`latch --help\` lists the commands and options`, [
      { field: "options", rule: "usage", message: (err as Error).message },
    ]);
    return undefined;
  }
}

/**
 * Every failure as the contract.md#d4 body (docs/api-conventions.md#cli): what the operator can fix says how; a
 * database that is out of reach or not migrated is `unavailable`; anything else is `internal_error`, its
 * cause logged (stderr) and never in the body, as the API does.
 */
async function reportFailure(err: unknown, deps: Deps | undefined): Promise<void> {
  if (err instanceof UsageError) {
    const message = `${err.message}; \`latch --help\` lists the commands and options`;
    writeError("validation_failed", message, [{ field: err.field, rule: "usage", message: err.message }]);
  } else if (err instanceof ConfigError) {
    writeError(
      "validation_failed",
      "Invalid configuration.",
      err.problems.map((problem) => ({ field: "environment", rule: "config", message: problem })),
    );
  } else if (err instanceof StartError) writeError("unavailable", err.message);
  else if (isAuthError(err)) writeError(err.code, withIssues(err.message, err.details), err.details);
  else if (isStorageUnavailable(err as { code?: string; message?: string }))
    writeError("unavailable", "The database is busy or out of reach. Please try again.");
  else if (deps !== undefined && !(await deps.store.isReady().catch(() => false)))
    writeError("unavailable", "The database is not migrated: run `latch migrate` (with the same DATABASE_URL).");
  else {
    if (deps !== undefined) deps.log.error({ err }, "command failed");
    else process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    writeError("internal_error", "Something went wrong; the log line above says what.");
  }
}

export async function runCli(argv: string[]): Promise<number> {
  try {
    refuseSecretOnCommandLine(argv);
  } catch (err) {
    await reportFailure(err, undefined);
    return 2;
  }
  const parsed = parseCommandLine(argv);
  if (!parsed) return 2;
  const { values, positionals } = parsed;
  const [group, command, arg] = positionals;
  if (values.help) {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  let deps: Deps | undefined;
  let database: string | undefined;
  try {
    if (!group) throw new UsageError("a command is required");
    const config = loadConfig();
    database = databaseNameOf(config.databaseUrl);
    process.stderr.write(`${databaseLine(config.databaseUrl, { fromEnvironment: Boolean(process.env.DATABASE_URL?.trim()), devMode: config.devMode })}\n`);
    // Only `latch migrate` and `tenant create` may create a database: another command on a file that is not there was meant for another one.
    const location = checkDatabaseLocation(config.databaseUrl, {
      mayCreate: group === "migrate" || (group === "tenant" && command === "create"),
      besideDevDatabase: false,
    });
    if (location.isNew) process.stderr.write(`latch: creating a new, empty database: ${location.description}\n`);
    deps = await createDeps(config, {
      log: createLogger(config.logLevel === "info" ? "warn" : config.logLevel, pino.destination(2)),
      migrate: group === "migrate" || undefined,
    });
    if (group === "migrate") {
      process.stdout.write(`${JSON.stringify({ migrated: true })}\n`);
      return 0; // createDeps ran the migrations
    }
    if (group === "secrets") return await runSecretsCommand(deps, command);
    if (group === "import") {
      const report = await runImportCommand(deps, command, values, (line) => process.stderr.write(`${line}\n`));
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return 0;
    }
    const result = await runGroupCommand(deps, group, command, arg, values);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    await reportFailure(database === undefined || !group ? err : inOperatorTerms(err, database, group, command, arg, values), deps);
    return err instanceof UsageError ? 2 : 1;
  } finally {
    await deps?.store.close();
    await deps?.redis?.close();
  }
}

process.exitCode = await runCli(process.argv.slice(2));

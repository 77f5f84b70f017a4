/**
 * `latch connection add|list|update|remove --tenant <domain>` (decisions.md#federated-connections):
 * the same flows as the admin API, printing the object the API answers for the same call.
 *
 * The client secret never comes as an argument's value: argv is readable by every user of the
 * machine (`ps`, /proc/<pid>/cmdline) and lands in shell history. It is read from a file
 * (`--client-secret-file <path>`) or from stdin (`--client-secret-file -`).
 */
import { readFileSync } from "node:fs";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { ConnectionChangesInput, NewConnectionInput } from "../flows/federation/connection-input.js";
import { createConnection, deleteConnection, listConnections, updateConnection } from "../flows/federation/connections.js";
import { connectionAnswer } from "../http/routes/connections.js";
import type { Tenant } from "../model.js";
import { need, UsageError } from "./usage.js";

export const CONNECTION_USAGE = `  latch connection add --tenant <domain> --id <slug> --type <oidc|google|microsoft|apple|gitlab|github>
      --display-name <text> --client-id <id> --client-secret-file <path|-> [--issuer <url>]
      [--scopes "<scope> …"] [--allow-signup true|false] [--email-domains <domain,…>]
  latch connection list --tenant <domain>
  latch connection update <id> --tenant <domain> [any option of add; --email-domains "" for any domain]
  latch connection remove <id> --tenant <domain>
      The client secret comes from a file or stdin (-), never as an argument: argv shows in \`ps\`.`;

/** parseArgs options of the connection commands (main.ts merges them with its own). */
export const CONNECTION_OPTIONS = {
  tenant: { type: "string" },
  id: { type: "string" },
  type: { type: "string" },
  "display-name": { type: "string" },
  issuer: { type: "string" },
  "client-id": { type: "string" },
  "client-secret-file": { type: "string" },
  scopes: { type: "string" },
  "allow-signup": { type: "string" },
  "email-domains": { type: "string" },
} as const;

export type ConnectionValues = { [K in keyof typeof CONNECTION_OPTIONS]?: string };

/** A `--client-secret …` on the command line is refused before anything runs, with the reason. */
export function refuseSecretOnCommandLine(argv: readonly string[]): void {
  if (argv.some((arg) => arg === "--client-secret" || arg.startsWith("--client-secret=")))
    throw new UsageError(
      "the client secret is not taken as an argument (argv shows in `ps` and shell history): use --client-secret-file <path>, or - for stdin",
      "--client-secret",
    );
}

function readSecret(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  // fd 0 is stdin: `printf %s "$SECRET" | latch connection add … --client-secret-file -`.
  const text = readFileSync(path === "-" ? 0 : path, "utf8").trim();
  if (text === "") throw new UsageError("the client secret file is empty", "--client-secret-file");
  return text;
}

function booleanOf(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== "true" && value !== "false") throw new UsageError("--allow-signup must be true or false", "--allow-signup");
  return value === "true";
}

/** Space- or comma-separated; an empty text is "none" (null) for the domains. */
function listOf(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(/[\s,]+/).filter(Boolean);
}

function changesOf(values: ConnectionValues): ConnectionChangesInput {
  const domains = listOf(values["email-domains"]);
  const changes = {
    type: values.type as ConnectionChangesInput["type"],
    displayName: values["display-name"],
    issuer: values.issuer,
    clientId: values["client-id"],
    clientSecret: readSecret(values["client-secret-file"]),
    scopes: listOf(values.scopes),
    allowSignup: booleanOf(values["allow-signup"]),
    emailDomains: domains === undefined ? undefined : domains.length === 0 ? null : domains,
  };
  // Absent options are no change: the flow's schema allows no key whose value is undefined.
  return Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
}

async function tenantOf(deps: Deps, values: ConnectionValues): Promise<Tenant> {
  const domain = need(values.tenant, "--tenant").trim().toLowerCase();
  const tenant = await deps.store.tenants.findTenantByDomain(domain);
  if (!tenant) throw new AuthError("unknown_tenant");
  return tenant;
}

export async function runConnectionCommand(deps: Deps, command: string | undefined, arg: string | undefined, values: ConnectionValues): Promise<unknown> {
  switch (command) {
    case "add": {
      const tenant = await tenantOf(deps, values);
      need(values["client-secret-file"], "--client-secret-file");
      const input = { id: need(values.id, "--id"), ...changesOf(values) } as NewConnectionInput;
      return { success: true, connection: connectionAnswer(await createConnection(deps, tenant, input)) };
    }
    case "list": {
      const tenant = await tenantOf(deps, values);
      return { success: true, connections: (await listConnections(deps, tenant)).map(connectionAnswer) };
    }
    case "update": {
      const tenant = await tenantOf(deps, values);
      return { success: true, connection: connectionAnswer(await updateConnection(deps, tenant, need(arg, "<id>"), changesOf(values))) };
    }
    case "remove": {
      const tenant = await tenantOf(deps, values);
      return { success: true, ...(await deleteConnection(deps, tenant, need(arg, "<id>"))) };
    }
    case undefined: // `latch connection` alone
    default:
      throw new UsageError(`unknown connection command: ${command ?? "(none)"}`);
  }
}

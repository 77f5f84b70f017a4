/**
 * `latch oauth-client add|list|show|update|remove --tenant <domain>` (decisions.md#openid-provider-clients):
 * the same flows as the admin API, printing the object the API answers for the same call. A
 * confidential client's secret is printed once, by `add`, and never again.
 */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { NewOauthClientInput, OauthClientChangesInput } from "../flows/oidc/client-input.js";
import { createOauthClient, deleteOauthClient, getOauthClient, listOauthClients, updateOauthClient } from "../flows/oidc/clients.js";
import { oauthClientAnswer } from "../http/routes/oauth-clients.js";
import type { Tenant } from "../model.js";
import { need, UsageError } from "./usage.js";

export const OAUTH_CLIENT_USAGE = `  latch oauth-client add --tenant <domain> --name <text> --type <confidential|public>
      --redirect-uri <uri> [--redirect-uri <uri> …] [--post-logout-redirect-uri <uri> …] [--first-party true|false]
      (a confidential client's secret is printed this once: Latch keeps only its hash)
  latch oauth-client list --tenant <domain>
  latch oauth-client show <clientId> --tenant <domain>
  latch oauth-client update <clientId> --tenant <domain> [--name <text>] [--redirect-uri <uri> …]
      [--post-logout-redirect-uri <uri> … | --post-logout-redirect-uri ""] [--first-party true|false]
      (a list given replaces the stored one; the type and the secret never change)
  latch oauth-client remove <clientId> --tenant <domain>`;

/** parseArgs options of the oauth-client commands (main.ts merges them with its own; `--tenant` and `--type` are shared with `latch connection`). */
export const OAUTH_CLIENT_OPTIONS = {
  tenant: { type: "string" },
  type: { type: "string" },
  name: { type: "string" },
  "redirect-uri": { type: "string", multiple: true },
  "post-logout-redirect-uri": { type: "string", multiple: true },
  "first-party": { type: "string" },
} as const;

export type OauthClientValues = {
  tenant?: string;
  type?: string;
  name?: string;
  "redirect-uri"?: string[];
  "post-logout-redirect-uri"?: string[];
  "first-party"?: string;
};

function booleanOf(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== "true" && value !== "false") throw new UsageError("--first-party must be true or false", "--first-party");
  return value === "true";
}

/** Each repeat of the option is one URI; an empty one (`--post-logout-redirect-uri ""`) names none, so the list can be emptied. */
function urisOf(values: string[] | undefined): string[] | undefined {
  return values?.filter((uri) => uri !== "");
}

function changesOf(values: OauthClientValues): OauthClientChangesInput {
  const changes = {
    name: values.name,
    redirectUris: urisOf(values["redirect-uri"]),
    postLogoutRedirectUris: urisOf(values["post-logout-redirect-uri"]),
    firstParty: booleanOf(values["first-party"]),
  };
  // Absent options are no change: the flow's schema allows no key whose value is undefined.
  return Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
}

async function tenantOf(deps: Deps, values: OauthClientValues): Promise<Tenant> {
  const domain = need(values.tenant, "--tenant").trim().toLowerCase();
  const tenant = await deps.store.tenants.findTenantByDomain(domain);
  if (!tenant) throw new AuthError("unknown_tenant");
  return tenant;
}

export async function runOauthClientCommand(deps: Deps, command: string | undefined, arg: string | undefined, values: OauthClientValues): Promise<unknown> {
  switch (command) {
    case "add": {
      const tenant = await tenantOf(deps, values);
      need(values.name, "--name");
      need(values.type, "--type");
      need(values["redirect-uri"]?.[0], "--redirect-uri");
      const input = { type: values.type, ...changesOf(values) } as NewOauthClientInput;
      return { success: true, client: oauthClientAnswer(await createOauthClient(deps, tenant, input)) };
    }
    case "list": {
      const tenant = await tenantOf(deps, values);
      return { success: true, clients: (await listOauthClients(deps, tenant)).map(oauthClientAnswer) };
    }
    case "show": {
      const tenant = await tenantOf(deps, values);
      return { success: true, client: oauthClientAnswer(await getOauthClient(deps, tenant, need(arg, "<clientId>"))) };
    }
    case "update": {
      const tenant = await tenantOf(deps, values);
      const changes = changesOf(values);
      if (Object.keys(changes).length === 0)
        throw new UsageError("nothing to change: give --name, --redirect-uri, --post-logout-redirect-uri or --first-party");
      return { success: true, client: oauthClientAnswer(await updateOauthClient(deps, tenant, need(arg, "<clientId>"), changes)) };
    }
    case "remove": {
      const tenant = await tenantOf(deps, values);
      return { success: true, ...(await deleteOauthClient(deps, tenant, need(arg, "<clientId>"))) };
    }
    case undefined: // `latch oauth-client` alone
    default:
      throw new UsageError(`unknown oauth-client command: ${command ?? "(none)"}`);
  }
}

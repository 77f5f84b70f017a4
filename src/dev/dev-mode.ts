/**
 * What dev mode (DEV_MODE=true, `npm run dev`) keeps in the process: the dev inbox, where the
 * dev tenant's page links point, and its fake identity provider. Deps carries it only in dev mode; in production it is undefined.
 */
import type { DevLinks } from "../deps.js";
import type { DevIdp } from "./idp.js";
import { DevInbox } from "./inbox.js";

/** The tenant dev mode creates at start. A browser on http://localhost:<port> resolves to it by Host (contract.md#d2). */
export const DEV_TENANT_DOMAIN = "localhost";

export class DevMode implements DevLinks {
  readonly inbox = new DevInbox();
  /** http://localhost:<port>, set once the server listens (startDevMode); until then links keep https://. */
  linkBase: string | undefined;
  /** The fake identity provider under /dev/idp (dev-provider.ts), made once the port is known. */
  idp: DevIdp | undefined;

  /**
   * The dev tenant's links point at this process, so they open locally. Every other tenant, even in
   * dev mode, keeps https://<stored domain> (contract.md#d2): this never reads a request header.
   */
  linkBaseFor(domain: string): string | undefined {
    return domain === DEV_TENANT_DOMAIN ? this.linkBase : undefined;
  }
}

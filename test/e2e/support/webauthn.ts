/** The browser's own WebAuthn against a virtual authenticator, through the DevTools protocol's WebAuthn domain. */
import type { CDPSession } from "playwright-core";

/**
 * A platform authenticator in this page's browser: resident keys (so passkeys are discoverable) and
 * user verification that always passes, with presence given at once. Returns its id, for reading
 * back the credentials it holds.
 */
export async function addVirtualAuthenticator(cdp: CDPSession): Promise<string> {
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return authenticatorId;
}

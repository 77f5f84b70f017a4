/**
 * D26 in the browser: the WebAuthn half of "Add a passkey" and "Sign in with a passkey", with
 * @simplewebauthn/browser between the API's options JSON and navigator.credentials. The forms are
 * rendered hidden (passkey-pages.ts) and shown here only where the browser has WebAuthn.
 */
import { browserSupportsWebAuthn, startAuthentication, startRegistration } from "@simplewebauthn/browser";
import type { LatchClient } from "../../../packages/client/src/index.js";
import { pagePaths, safeRedirectPath, withNotice } from "../paths.js";

type Fields = Record<string, string>;

/** Shows the passkey forms, and hides the note that says what is missing, when WebAuthn is there. */
export function revealPasskeyForms(root: Document): void {
  if (!browserSupportsWebAuthn()) return;
  for (const element of root.querySelectorAll<HTMLElement>(".passkey-only")) element.hidden = false;
  for (const element of root.querySelectorAll<HTMLElement>(".passkey-missing")) element.hidden = true;
}

/** What the member is told when the browser's passkey step ends without one (cancelled, timed out, refused). */
export class PasskeyStepFailed extends Error {}

function failed(error: unknown, adding: boolean): PasskeyStepFailed {
  const name = error instanceof Error ? error.name : "";
  if (adding && name === "InvalidStateError") return new PasskeyStepFailed("This device already has a passkey for your account.");
  return new PasskeyStepFailed(adding ? "No passkey was added: the request was cancelled or timed out. Try again." : "No passkey was used: the request was cancelled or timed out. Try again.");
}

export async function addPasskey(client: LatchClient, fields: Fields): Promise<string> {
  const optionsJSON = await client.startPasskeyRegistration({
    ...(fields.password ? { password: fields.password } : {}),
    ...(fields.twoFACode ? { twoFACode: fields.twoFACode } : {}),
  });
  let response;
  try {
    response = await startRegistration({ optionsJSON: optionsJSON as never });
  } catch (error) {
    throw failed(error, true);
  }
  await client.finishPasskeyRegistration({ response, ...(fields.name?.trim() ? { name: fields.name } : {}) });
  return withNotice(pagePaths.accountPasskeys, "passkey-added");
}

export async function signInWithPasskey(client: LatchClient, fields: Fields): Promise<string> {
  const optionsJSON = await client.startPasskeyLogin({ ...(fields["bot-challenge-response"] ? { "bot-challenge-response": fields["bot-challenge-response"] } : {}) });
  let response;
  try {
    response = await startAuthentication({ optionsJSON: optionsJSON as never });
  } catch (error) {
    throw failed(error, false);
  }
  const result = await client.finishPasskeyLogin({ response });
  return result.authorized ? safeRedirectPath(result.redirectUrl, pagePaths.account) : pagePaths.login;
}

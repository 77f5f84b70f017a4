/**
 * contract.md#d26 in the browser: the WebAuthn half of "Add a passkey" and "Sign in with a passkey", with
 * @simplewebauthn/browser between the API's options JSON and navigator.credentials. The forms are
 * rendered hidden (passkey-pages.ts) and shown here only where the browser has WebAuthn.
 */
import { browserSupportsWebAuthn, browserSupportsWebAuthnAutofill, startAuthentication, startRegistration } from "@simplewebauthn/browser";
import type { LatchClient } from "../../../packages/client/src/index.js";
import { pagePaths, returnToPath, safeRedirectPath, withNotice } from "../paths.js";

type Fields = Record<string, string>;
type LoginOptions = Awaited<ReturnType<LatchClient["startPasskeyLogin"]>>;

interface AltchaWidget extends HTMLElement {
  verify?: () => Promise<{ payload: string } | null>;
  reset?: () => void;
}

/**
 * Login options fetched for autofill and not used yet: the button uses them (its own request would
 * abort the autofill one), so a member never waits for a second bot check. A promise from the
 * start of the autofill's bot check: a button pressed while that check is solving is sent when it
 * is solved (bot-check.ts), and must wait for these options, not spend the same answer again.
 */
let autofillOptions: Promise<LoginOptions | undefined> | undefined;

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
  return new PasskeyStepFailed(
    adding
      ? "No passkey was added: the request was cancelled or timed out. Try again."
      : "No passkey was used: the request was cancelled or timed out. Try again.",
  );
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

async function finishLogin(client: LatchClient, response: Awaited<ReturnType<typeof startAuthentication>>): Promise<string> {
  const result = await client.finishPasskeyLogin({ response });
  if (!result.authorized) return pagePaths.login;
  // The login page's `?returnTo=`, as its password form goes there (paths.ts returnToPath).
  return returnToPath(new URLSearchParams(window.location.search).get("returnTo") ?? undefined) ?? safeRedirectPath(result.redirectUrl, pagePaths.account);
}

export async function signInWithPasskey(client: LatchClient, fields: Fields): Promise<string> {
  const held = autofillOptions;
  autofillOptions = undefined;
  const optionsJSON =
    (await held) ??
    (await client.startPasskeyLogin({ ...(fields["bot-challenge-response"] ? { "bot-challenge-response": fields["bot-challenge-response"] } : {}) }));
  let response;
  try {
    response = await startAuthentication({ optionsJSON: optionsJSON as never });
  } catch (error) {
    throw failed(error, false);
  }
  return finishLogin(client, response);
}

/**
 * Conditional UI: where the browser offers passkeys in the email field's autofill, the login page
 * asks for options at once (solving the passkey form's bot check first) and waits for the member to
 * pick one there. Until then nothing shows: a failure to get options leaves the page as it was
 * (the button still works); a passkey picked and then refused is told in the passkey form.
 */
export async function offerPasskeyAutofill(root: Document, client: LatchClient, refused: (form: HTMLFormElement, error: unknown) => void): Promise<void> {
  const form = root.querySelector<HTMLFormElement>('form[data-latch-form="passkeyLogin"]');
  if (!form || !browserSupportsWebAuthn() || !(await browserSupportsWebAuthnAutofill())) return;
  const widget = form.querySelector<AltchaWidget>("altcha-widget");
  const options = fetchAutofillOptions(client, widget);
  autofillOptions = options;
  const optionsJSON = await options;
  if (!optionsJSON) return;
  let response;
  try {
    response = await startAuthentication({ optionsJSON: optionsJSON as never, useBrowserAutofill: true });
  } catch {
    // Aborted by the button, which took over the same options: the button goes on.
    return;
  }
  autofillOptions = undefined;
  try {
    window.location.assign(await finishLogin(client, response));
  } catch (error) {
    // The widget's answer was spent on these options: the button's next press solves anew.
    widget?.reset?.();
    refused(form, error);
  }
}

/**
 * The bot check (ALTCHA's proof of work, in the background) and the login options, or undefined
 * when either fails: the button then asks for options itself. The widget is left "verified" after
 * its answer is spent, so the button isn't stopped by the widget's required checkbox: it uses
 * these options and needs no new answer.
 */
async function fetchAutofillOptions(client: LatchClient, widget: AltchaWidget | null): Promise<LoginOptions | undefined> {
  try {
    const bot = widget ? (await widget.verify?.())?.payload : undefined;
    if (widget && !bot) return undefined;
    return await client.startPasskeyLogin(bot ? { "bot-challenge-response": bot } : {});
  } catch {
    widget?.reset?.();
    return undefined;
  }
}

/**
 * contract.md#d26 in the browser: the WebAuthn half of "Add a passkey" and "Sign in with a passkey", with
 * @simplewebauthn/browser between the API's options JSON and navigator.credentials. The forms are
 * rendered hidden (passkey-pages.ts) and shown here only where the browser has WebAuthn.
 */
import { browserSupportsWebAuthn, browserSupportsWebAuthnAutofill, startAuthentication, startRegistration } from "@simplewebauthn/browser";
import type { LatchClient } from "../../../packages/client/src/index.js";
import { pagePaths, returnToPath, safeRedirectPath, withNotice } from "../paths.js";
import { type AltchaWidget, pageBotWidget, setFormStatus, takeBotAnswer } from "./bot-check.js";

type Fields = Record<string, string>;
type LoginOptions = Awaited<ReturnType<LatchClient["startPasskeyLogin"]>>;

/**
 * Login options fetched for autofill and not used yet: the button uses them (its own request would
 * abort the autofill one), so a member never waits for a second bot check. A promise from the
 * start of the autofill's bot check: a button pressed while that check is solving waits for these
 * options rather than taking a second answer.
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

const WAITING_MESSAGE = "Checking that you are not a bot. Your passkey will be asked for when that is done.";
const BOT_CHECK_FAILED = "No passkey was asked for: the check that you are not a bot did not finish. Try again.";

/**
 * The login page has one bot check, in the password form (hosted-pages.md#one-bot-check): the passkey
 * button takes its answer, which resets it for the password form. Without a widget (no bot check, or
 * a provider these pages can't show) the options are asked for without an answer, and the API decides.
 */
async function optionsWithBotAnswer(client: LatchClient): Promise<LoginOptions> {
  const widget = pageBotWidget(document);
  if (!widget) return client.startPasskeyLogin({});
  if (widget.getState?.() !== "verified") setFormStatus(WAITING_MESSAGE);
  const bot = await takeBotAnswer(widget);
  setFormStatus("");
  if (!bot) throw new PasskeyStepFailed(BOT_CHECK_FAILED);
  return client.startPasskeyLogin({ "bot-challenge-response": bot });
}

export async function signInWithPasskey(client: LatchClient): Promise<string> {
  const held = autofillOptions;
  autofillOptions = undefined;
  const optionsJSON = (await held) ?? (await optionsWithBotAnswer(client));
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
 * asks for options at once (taking the page's bot-check answer first) and waits for the member to
 * pick one there. Until then nothing shows: a failure to get options leaves the page as it was
 * (the button still works); a passkey picked and then refused is told in the passkey form.
 */
export async function offerPasskeyAutofill(root: Document, client: LatchClient, refused: (form: HTMLFormElement, error: unknown) => void): Promise<void> {
  const form = root.querySelector<HTMLFormElement>('form[data-latch-form="passkeyLogin"]');
  if (!form || !browserSupportsWebAuthn() || !(await browserSupportsWebAuthnAutofill())) return;
  const options = fetchAutofillOptions(client, pageBotWidget(root));
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
    refused(form, error);
  }
}

/**
 * The page's bot-check answer (ALTCHA's proof of work, in the background) and the login options, or
 * undefined when either fails: the button then asks for options itself, with a new answer. The
 * answer is spent here, so the widget is reset for the password form (takeBotAnswer).
 */
async function fetchAutofillOptions(client: LatchClient, widget: AltchaWidget | null): Promise<LoginOptions | undefined> {
  try {
    const bot = widget ? await takeBotAnswer(widget) : undefined;
    if (widget && !bot) return undefined;
    return await client.startPasskeyLogin(bot ? { "bot-challenge-response": bot } : {});
  } catch {
    return undefined;
  }
}

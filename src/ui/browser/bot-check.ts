/**
 * contract.md#issue-16: a submit pressed while the ALTCHA widget is still solving its proof of work (seconds,
 * see docs/hosted-pages.md) is kept, and the form is sent once the answer is in.
 *
 * The widget's checkbox is `required` until it is verified, so the browser's own validation stops
 * such a submit (its "Verifying... please wait." bubble) and nothing else happens: the member had
 * to notice, wait and press again. Here that refusal, the checkbox's `invalid` event when nothing
 * else in the form is invalid, is taken as the press: no bubble, a status line says the form will
 * be sent, and when the widget reports `verified` the form is submitted, once, as if pressed then
 * (so the enhanced submit in enhance.ts, or the plain post, runs as usual). A check that ends any
 * other way (error, expired, reset) drops the press: the widget shows its error, the status line
 * says nothing was sent. Without JavaScript there is no widget and the plain post is untouched.
 */

export interface AltchaWidget extends HTMLElement {
  getState?: () => string;
  verify?: () => Promise<{ payload?: string } | null>;
  reset?: () => void;
}

const WAITING_MESSAGE = "Checking that you are not a bot. Your form will be sent when that is done.";
const FAILED_MESSAGE = "Your form was not sent: the check that you are not a bot did not finish. Try the check again.";

export function setFormStatus(text: string): void {
  const status = document.getElementById("form-status");
  if (status) status.textContent = text;
}

/** True when the widget's own checkbox is the only thing that stops the form from being sent. */
function onlyBotCheckInvalid(form: HTMLFormElement, widget: AltchaWidget): boolean {
  return [...form.elements].every((element) => {
    const control = element as HTMLInputElement;
    return widget.contains(control) || !control.willValidate || control.validity.valid;
  });
}

function sendWhenSolved(form: HTMLFormElement, widget: AltchaWidget): void {
  // The button that was pressed (Enter in a field clicks the default one): `invalid` doesn't say.
  let submitter: HTMLButtonElement | HTMLInputElement | undefined;
  let waiting = false;
  form.addEventListener(
    "click",
    (event) => {
      const button = (event.target as Element | null)?.closest?.<HTMLButtonElement | HTMLInputElement>("button, input");
      if (button?.type === "submit" && button.form === form && !widget.contains(button)) submitter = button;
    },
    true,
  );
  // `invalid` doesn't bubble; a capturing listener on the form still sees it.
  form.addEventListener(
    "invalid",
    (event) => {
      if (!widget.contains(event.target as Node)) return;
      const state = widget.getState?.();
      if ((state !== "verifying" && state !== "unverified") || !onlyBotCheckInvalid(form, widget)) return;
      event.preventDefault();
      if (!waiting) {
        waiting = true;
        setFormStatus(WAITING_MESSAGE);
        void settled(widget).then((outcome) => {
          waiting = false;
          if (outcome !== "verified") return setFormStatus(FAILED_MESSAGE);
          setFormStatus("");
          form.requestSubmit(submitter?.isConnected ? submitter : undefined);
        });
      }
      if (state === "unverified") void widget.verify?.();
    },
    true,
  );
}

export function sendFormsWhenBotCheckSolved(root: Document): void {
  for (const widget of root.querySelectorAll<AltchaWidget>("form altcha-widget")) {
    const form = widget.closest("form");
    if (form) sendWhenSolved(form, widget);
  }
}

/** The page's one bot check: the login page's passkey shares the password form's (hosted-pages.md#one-bot-check). */
export function pageBotWidget(root: Document): AltchaWidget | null {
  return root.querySelector<AltchaWidget>("form altcha-widget");
}

/** The widget's next state other than "verifying": how the check under way (or about to start) ended. */
function settled(widget: AltchaWidget): Promise<string | undefined> {
  return new Promise((resolve) => {
    const done = (event: Event): void => {
      const state = (event as CustomEvent<{ state?: string }>).detail?.state;
      if (state === "verifying") return;
      widget.removeEventListener("statechange", done);
      resolve(state);
    };
    widget.addEventListener("statechange", done);
  });
}

/**
 * An answer of the widget for a request sent outside its form (the passkey's options), or undefined
 * when the check doesn't finish. An answer is good for one request, so the widget is reset at once,
 * and its form never sends the spent answer; then it solves anew in the background, so the form has
 * an answer ready (autofill takes the first one as the page loads, before anyone focused the form).
 * A check already solving is waited for rather than started twice.
 */
export async function takeBotAnswer(widget: AltchaWidget): Promise<string | undefined> {
  const field = (): string => widget.querySelector<HTMLInputElement>('input[name="bot-challenge-response"]')?.value ?? "";
  const state = widget.getState?.();
  if (state === "verifying") await settled(widget);
  else if (state !== "verified") await widget.verify?.();
  const answer = widget.getState?.() === "verified" ? field() : "";
  widget.reset?.();
  void widget.verify?.();
  return answer === "" ? undefined : answer;
}

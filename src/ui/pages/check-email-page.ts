/**
 * "Check your email", after each step that sends one. After a magic link request it also offers
 * the code of that email (contract.md#d26), for a member who reads the email on another device: the
 * form posts to this page, whose handler calls verifyLoginCode (the flow of
 * /auth/verify-login-code), then lands like the link's page or asks for the second factor on the
 * same step page as the link.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AuthError } from "../../errors.js";
import { verifyLoginCode } from "../../flows/login/login-code.js";
import { EmailField, LOGIN_CODE_PATTERN } from "../../http/schemas.js";
import { setSessionCookie } from "../../http/session-cookie.js";
import { contextOf } from "../../http/tenant.js";
import { formErrorForCode } from "../form-errors.js";
import { NEXT_LINK_AFTER } from "../refusals.js";
import { formValues, FormInvalid, maxLengthOf, readFields, type FieldRule, type FormValues } from "../forms.js";
import { html, type Html } from "../html.js";
import { botWidget, emailField, field, form, hidden, sendPage, type FormError } from "../layout.js";
import { checkEmailPath, pagePaths, type EmailSentFor } from "../paths.js";
import { describeDuration, LOGIN_CODE_DIGITS, TOKEN_LIFETIMES_MS } from "../../rules.js";
import { forgetLoginEmail, handleForm, isSignedIn, magicLoginSuccessPath, page, rememberedLoginEmail, type PageDeps } from "./common.js";
import { CODE_RULE as SECOND_FACTOR_RULE, EMAIL_RULE, magicLoginSecondFactorPage, missingSecondFactorErrors, type MagicLoginCarried } from "./login-pages.js";

const hide = { schema: { hide: true } };
const BOT = "bot-challenge-response";
const OPERATION = "verifyLoginCode";
const LOGIN_CODE_RULE: FieldRule = { name: "code", what: `the ${LOGIN_CODE_DIGITS}-digit code from the email`, max: LOGIN_CODE_DIGITS };

const SENT_TEXT: Record<EmailSentFor, string> = {
  registration: "We have sent you an email with a link to confirm your address. Open it to finish registering.",
  verification: "If an account with that email is waiting for verification, we have sent a new confirmation email.",
  reset: "If an account exists for that email, we have sent a link to reset the password. It works for a limited time.",
  "magic-link": `If an account exists for that email, we have sent a login link. It works for ${describeDuration(TOKEN_LIFETIMES_MS.magic_login)}.`,
  "email-change":
    `If that address can be used, we have sent a confirmation link to it. ` +
    `It works for ${describeDuration(TOKEN_LIFETIMES_MS.email_change)}. Your email changes when you open it.`,
};

/**
 * The code form. The address asked for rides along hidden when the page knows it (the remembered
 * one, or the one posted back hidden); otherwise, or when it was typed here, it is a field.
 */
function emailedCodeForm(request: FastifyRequest, values: FormValues, errors: FormError[]): Html {
  const remembered = rememberedLoginEmail(request, maxLengthOf(EmailField));
  const email = values.email ?? remembered ?? "";
  const emailPart =
    email !== "" && email === remembered ? html`${hidden("email", email)}<p>Email address: <strong>${email}</strong></p>` : emailField(email, errors);
  return html`<h2 id="login-code-title">Or enter the ${LOGIN_CODE_DIGITS}-digit code from the email</h2>
${form({
  operation: OPERATION,
  action: checkEmailPath("magic-link"),
  labelledBy: "login-code-title",
  submit: "Log in",
  content: html`${emailPart}
${field({
  name: "code",
  label: "Code from the email",
  autocomplete: "one-time-code",
  inputmode: "numeric",
  pattern: LOGIN_CODE_PATTERN,
  maxlength: LOGIN_CODE_DIGITS,
  hint: `${LOGIN_CODE_DIGITS} digits, in the same email as the link.`,
  errors,
})}
${botWidget(request.tenant)}`,
})}
<p>${NEXT_LINK_AFTER} <a href="${pagePaths.magicLink}">Request a new login link</a></p>`;
}

/** The second-factor step after a right code: the email and code go back hidden with the 2FA code. */
function carriedCode(values: FormValues): MagicLoginCarried {
  return {
    operation: OPERATION,
    action: checkEmailPath("magic-link"),
    fields: html`${hidden("email", values.email ?? "")}${hidden("code", values.code ?? "")}`,
  };
}

function sentForOf(request: FastifyRequest): EmailSentFor | undefined {
  const sentFor = (request.query as { for?: unknown } | undefined)?.for;
  return typeof sentFor === "string" && Object.hasOwn(SENT_TEXT, sentFor) ? (sentFor as EmailSentFor) : undefined;
}

export async function checkEmailPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const checkEmailPage = (request: FastifyRequest, sentFor: EmailSentFor | undefined, values: FormValues, errors: FormError[]) => {
    const text = sentFor ? SENT_TEXT[sentFor] : "If the address is known to us, we have sent you an email.";
    const dev = deps.dev ? html`<p class="note">Dev mode: the email is not sent; it is in the <a href="/dev/inbox">dev inbox</a>.</p>` : html``;
    const codeForm = sentFor === "magic-link" ? emailedCodeForm(request, values, errors) : html``;
    // hosted-pages.md#signed-in-state: after an email change the member is still signed in; their way back is the account.
    const back = isSignedIn(request) ? html`<a href="${pagePaths.account}">Back to your account</a>` : html`<a href="${pagePaths.login}">Back to log in</a>`;
    const body = html`<p>${text}</p>${dev}${codeForm}<p>${back}</p>`;
    return page(deps, request, { title: "Check your email", body, errors, botGuarded: sentFor === "magic-link" });
  };

  app.get(pagePaths.checkEmail, hide, async (request, reply) => sendPage(reply, 200, checkEmailPage(request, sentForOf(request), {}, [])));

  // contract.md#d26: only the magic link's variant has a form; it posts here whatever the query says.
  app.post(pagePaths.checkEmail, hide, async (request, reply) => {
    const values = formValues(request);
    const codeStep = "twoFACode" in values;
    const render = (errors: FormError[], error: unknown) => {
      // A wrong, used or expired code: the code form again, worded by the error's code.
      const own = error instanceof AuthError ? formErrorForCode(OPERATION, error.code) : undefined;
      if (codeStep && !own) return magicLoginSecondFactorPage(deps, request, errors, carriedCode(values));
      return checkEmailPage(request, "magic-link", values, own ? [own] : errors);
    };
    return handleForm(reply, OPERATION, codeStep ? ["twoFACode"] : ["email", "code"], render, async () => {
      const { email, code, twoFACode } = readFields(values, [EMAIL_RULE, LOGIN_CODE_RULE, SECOND_FACTOR_RULE]);
      // Refused before the flow, as the JSON route's schema does: a typo is not a guess.
      if (!new RegExp(`^${LOGIN_CODE_PATTERN}$`).test(code!)) throw new FormInvalid([{ field: "code", message: `Enter ${LOGIN_CODE_RULE.what}.` }]);
      const result = await verifyLoginCode(
        deps,
        request.tenant,
        { email: email!, code: code!, botToken: values[BOT], twoFACode: twoFACode || undefined },
        contextOf(request),
      );
      if (result.kind !== "signed_in")
        return sendPage(reply, 200, magicLoginSecondFactorPage(deps, request, missingSecondFactorErrors(codeStep), carriedCode(values)));
      setSessionCookie(reply, result.session);
      forgetLoginEmail(reply);
      return reply.redirect(magicLoginSuccessPath(request, reply), 303);
    });
  });
}

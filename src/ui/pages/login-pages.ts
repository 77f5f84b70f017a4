/**
 * Password login with its second-factor step, the magic-link request, the magic-link page (spec
 * 4.6 /verify-magic-link/{recordId}/{token}) with the second-factor step it shares with the
 * emailed code (check-email-page.ts), and logout. Without JavaScript the 2FA step is a new
 * login request (contract.md#spec-4-2, contract.md#spec-4-4): the page carries the first step's fields back with a fresh bot check.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AuthError } from "../../errors.js";
import { loginWithPassword } from "../../flows/login/login.js";
import { requestMagicLink, verifyMagicLink } from "../../flows/login/magic-link.js";
import { logout } from "../../flows/kernel/sessions.js";
import { isLinkLive } from "../../flows/kernel/one-time-tokens.js";
import { EmailField, PasswordField, SecondFactorCodeField } from "../../http/schemas.js";
import { clearSessionCookie, setSessionCookie } from "../../http/session-cookie.js";
import { contextOf, SESSION_COOKIE } from "../../http/tenant.js";
import { TWO_FACTOR_CODE_HINT } from "../form-errors.js";
import { html, type Html } from "../html.js";
import { botWidget, emailField, field, form, hidden, sendPage, type FormError } from "../layout.js";
import { formValues, isInvalidToken, maxLengthOf, readFields, type FieldRule, type FormValues } from "../forms.js";
import { checkEmailPath, pagePaths, withNotice } from "../paths.js";
import {
  findSession,
  handleForm,
  loginSuccessPath,
  magicLoginSuccessPath,
  noticeOf,
  page,
  rememberedLoginEmail,
  rememberLoginEmail,
  rememberLoginReturnTo,
  type PageDeps,
} from "./common.js";
import { continueWithProviders, returnToOf, withReturnTo } from "./federation-pages.js";
import { passkeyOnly } from "./passkey-pages.js";
import { describeDuration, TOKEN_LIFETIMES_MS } from "../../rules.js";
import { readLinkParams, tokenPageRoutes } from "./token-page.js";

const hide = { schema: { hide: true } };
const BOT = "bot-challenge-response";
/** What each form posted here names in data-latch-form and gives handleForm: one operation, whose words its 429 takes (hosted-pages.md#refusals). */
const OPERATIONS = { login: "loginWithPassword", requestLink: "requestMagicLink", verifyLink: "verifyMagicLink" } as const;
export const EMAIL_RULE: FieldRule = { name: "email", what: "your email address", max: maxLengthOf(EmailField) };
const PASSWORD_RULE: FieldRule = { name: "password", what: "your password", max: maxLengthOf(PasswordField), keepSpaces: true };
export const CODE_RULE: FieldRule = { name: "twoFACode", what: "the code", max: maxLengthOf(SecondFactorCodeField), optional: true };

function codeField(errors: FormError[]): Html {
  return field({
    name: "twoFACode",
    label: "Authentication code",
    autocomplete: "one-time-code",
    inputmode: "text",
    hint: TWO_FACTOR_CODE_HINT,
    errors,
  });
}

/**
 * `?returnTo=` (a path on this site, e.g. /ui/federated-link) rides in the form's action, not in a
 * field: the script sends the fields to the API as they are, and the API takes no such field.
 */
function loginForm(request: FastifyRequest, values: FormValues, errors: FormError[], providers: Html): Html {
  return html`${form({
    operation: OPERATIONS.login,
    action: withReturnTo(pagePaths.login, returnToOf(request)),
    submit: "Log in",
    content: html`${field({ name: "email", label: "Email address", type: "email", autocomplete: "username webauthn", value: values.email, errors })}
${field({ name: "password", label: "Password", type: "password", autocomplete: "current-password", errors })}
${botWidget(request.tenant)}`,
  })}
${passkeyOnly(html`<h2 id="passkey-title">Or use a passkey</h2>
${form({
  operation: "passkeyLogin",
  action: pagePaths.login,
  labelledBy: "passkey-title",
  submit: "Sign in with a passkey",
  submitClass: "secondary",
  // No widget of its own: the passkey takes the password form's answer (hosted-pages.md#one-bot-check).
  content: html``,
})}`)}
${providers}
<ul>
<li><a href="${pagePaths.forgotPassword}">Forgot your password?</a></li>
<li><a href="${withReturnTo(pagePaths.magicLink, returnToOf(request))}">Email me a login link instead</a></li>
<li><a href="${pagePaths.register}">Register</a></li>
</ul>`;
}

/** Step two without JavaScript: the first step's email and password ride along in hidden fields on a no-store page. */
function loginCodeForm(request: FastifyRequest, values: FormValues, errors: FormError[]): Html {
  return html`<p>Your account uses two-factor authentication.</p>
${form({
  operation: OPERATIONS.login,
  action: withReturnTo(pagePaths.login, returnToOf(request)),
  submit: "Verify and log in",
  content: html`${hidden("email", values.email ?? "")}${hidden("password", values.password ?? "")}
${codeField(errors)}
${botWidget(request.tenant)}`,
})}
<p><a href="${pagePaths.login}">Start again</a></p>`;
}

function magicLinkRequestForm(request: FastifyRequest, values: FormValues, errors: FormError[]): Html {
  const unverified = errors.some((e) => e.code === "email_not_verified");
  return html`<p>We will email you a link that logs you in once, within ${describeDuration(TOKEN_LIFETIMES_MS.magic_login)}.</p>
${form({
  operation: OPERATIONS.requestLink,
  action: withReturnTo(pagePaths.magicLink, returnToOf(request)),
  submit: "Email me a login link",
  content: html`${emailField(values.email, errors)}${botWidget(request.tenant)}`,
})}
${unverified ? html`<p><a href="${pagePaths.resendVerification}">Send the confirmation email again</a></p>` : ""}
<p><a href="${withReturnTo(pagePaths.login, returnToOf(request))}">Log in with a password</a></p>`;
}

/**
 * What the second-factor step of a magic login posts again. A link's page carries nothing: the
 * form posts to its own URL, which holds the link. An emailed code (contract.md#d26) carries the email and the
 * code in hidden fields of this no-store page, as the password login's step carries the password.
 */
export interface MagicLoginCarried {
  operation: "verifyMagicLink" | "verifyLoginCode";
  action?: string;
  fields: Html;
}

const CARRIED_BY_LINK: MagicLoginCarried = { operation: OPERATIONS.verifyLink, fields: html`` };

/** The second-factor step of a login by link or by its emailed code: the same page for both. */
export function magicLoginSecondFactorPage(
  deps: PageDeps["deps"],
  request: FastifyRequest,
  errors: FormError[],
  carried: MagicLoginCarried = CARRIED_BY_LINK,
): Html {
  const body = html`<p>Your account uses two-factor authentication.</p>
${form({
  operation: carried.operation,
  action: carried.action,
  submit: "Verify and log in",
  content: html`${carried.fields}${codeField(errors)}${botWidget(request.tenant)}`,
})}
<p><a href="${pagePaths.magicLink}">Request a new login link</a></p>`;
  return page(deps, request, { title: "Enter your authentication code", body, errors, botGuarded: true });
}

/** The second-factor step's errors: none on arriving at it, "enter the code" when it was posted without one. */
export function missingSecondFactorErrors(codeStep: boolean): FormError[] {
  return codeStep ? [{ field: "twoFACode", message: "Enter the code from your authenticator app or a recovery code." }] : [];
}

function magicLinkForm(request: FastifyRequest, dead: boolean): Html {
  if (dead) return html`<p><a href="${pagePaths.magicLink}">Request a new login link</a></p>`;
  return html`<p>Press the button to log in.</p>
${form({ operation: OPERATIONS.verifyLink, submit: "Log in", content: botWidget(request.tenant) })}
<p><a href="${pagePaths.magicLink}">Request a new login link</a></p>`;
}

/**
 * hosted-pages.md#login-email-after-verification: right after the member confirmed their address
 * (the notice says so), the form holds it, from the cookie the confirmation set, never from the URL.
 */
function verifiedEmailOf(request: FastifyRequest): FormValues {
  const notice = (request.query as { notice?: unknown } | undefined)?.notice;
  if (notice !== "email-verified" && notice !== "email-verified-no-password") return {};
  const email = rememberedLoginEmail(request, maxLengthOf(EmailField));
  return email === undefined ? {} : { email };
}

export async function loginPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const loginPage = async (request: FastifyRequest, values: FormValues, errors: FormError[], notice?: string) => {
    const providers = await continueWithProviders(deps, request, returnToOf(request));
    return page(deps, request, { title: "Log in", body: loginForm(request, values, errors, providers), errors, notice, botGuarded: true });
  };
  const codePage = (request: FastifyRequest, values: FormValues, errors: FormError[]) =>
    page(deps, request, { title: "Enter your authentication code", body: loginCodeForm(request, values, errors), errors, botGuarded: true });

  app.get(pagePaths.home, hide, async (request, reply) => reply.redirect((await findSession(deps, request)) ? pagePaths.account : pagePaths.login, 303));
  app.get("/ui", hide, async (_request, reply) => reply.redirect(pagePaths.home, 301));

  app.get(pagePaths.login, hide, async (request, reply) => sendPage(reply, 200, await loginPage(request, verifiedEmailOf(request), [], noticeOf(request))));
  app.post(pagePaths.login, hide, async (request, reply) => {
    const values = formValues(request);
    const codeStep = "twoFACode" in values;
    const render = (errors: FormError[]) => (codeStep ? codePage(request, values, errors) : loginPage(request, values, errors));
    return handleForm(reply, OPERATIONS.login, codeStep ? ["twoFACode"] : ["email", "password"], render, async () => {
      const { email, password, twoFACode } = readFields(values, [EMAIL_RULE, PASSWORD_RULE, CODE_RULE]);
      const result = await loginWithPassword(
        deps,
        request.tenant,
        { email: email!, password: password!, twoFACode: twoFACode || undefined, botToken: values[BOT] },
        contextOf(request),
      );
      if (result.kind !== "signed_in") return sendPage(reply, 200, codePage(request, values, missingSecondFactorErrors(codeStep)));
      setSessionCookie(reply, result.session);
      return reply.redirect(returnToOf(request) ?? loginSuccessPath(request), 303);
    });
  });

  app.get(pagePaths.magicLink, hide, async (request, reply) =>
    sendPage(
      reply,
      200,
      page(deps, request, {
        title: "Email me a login link",
        body: magicLinkRequestForm(request, verifiedEmailOf(request), []),
        notice: noticeOf(request),
        botGuarded: true,
      }),
    ),
  );
  app.post(pagePaths.magicLink, hide, async (request, reply) => {
    const values = formValues(request);
    const render = (errors: FormError[], error: unknown) => {
      // hosted-pages.md#refusals: the cooldown's way on is the code of the email already sent; its form needs the address.
      if (error instanceof AuthError && error.code === "rate_limited" && values.email?.trim()) rememberLoginEmail(reply, values.email.trim());
      return page(deps, request, { title: "Email me a login link", body: magicLinkRequestForm(request, values, errors), errors, botGuarded: true });
    };
    return handleForm(reply, OPERATIONS.requestLink, ["email"], render, async () => {
      const { email } = readFields(values, [EMAIL_RULE]);
      await requestMagicLink(deps, request.tenant, { email: email!, botToken: values[BOT] }, contextOf(request));
      rememberLoginEmail(reply, email!);
      rememberLoginReturnTo(reply, returnToOf(request));
      return reply.redirect(checkEmailPath("magic-link"), 303);
    });
  });

  // The magic link's page. GET renders the button (and the bot check: the endpoint is guarded).
  tokenPageRoutes(app, "verify-magic-link", {
    // A used or expired link shows the way to a new one, never a button that can only fail (hosted-pages.md#every-page-has-a-next-step).
    isLive: (request, link) => isLinkLive(deps, request.tenant, link, "magic_login"),
    render: (request, errors, alive) => page(deps, request, { title: "Log in with your link", body: magicLinkForm(request, !alive), errors, botGuarded: true }),
    submit: async (request, reply) => {
      const link = readLinkParams(request);
      const values = formValues(request);
      const codeStep = "twoFACode" in values;
      const render = (errors: FormError[], error: unknown) => {
        const dead = !link || isInvalidToken(error);
        if (codeStep && !dead) return magicLoginSecondFactorPage(deps, request, errors);
        return page(deps, request, { title: "Log in with your link", body: magicLinkForm(request, dead), errors, botGuarded: true });
      };
      return handleForm(reply, OPERATIONS.verifyLink, ["twoFACode"], render, async () => {
        if (!link) throw new AuthError("invalid_token");
        const { twoFACode } = readFields(values, [CODE_RULE]);
        const result = await verifyMagicLink(deps, request.tenant, { ...link, botToken: values[BOT], twoFACode: twoFACode || undefined }, contextOf(request));
        if (result.kind !== "signed_in") return sendPage(reply, 200, magicLoginSecondFactorPage(deps, request, missingSecondFactorErrors(codeStep)));
        setSessionCookie(reply, result.session);
        return reply.redirect(magicLoginSuccessPath(request, reply), 303);
      });
    },
  });

  app.post(pagePaths.logout, hide, async (request, reply) => {
    await logout(deps, request.tenant, request.cookies[SESSION_COOKIE]);
    clearSessionCookie(reply);
    return reply.redirect(withNotice(pagePaths.login, "logged-out"), 303);
  });
}

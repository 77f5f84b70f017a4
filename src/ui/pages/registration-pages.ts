/**
 * Registration (password or email only), resend verification, and the email
 * verification link page (contract.md#spec-4-6 /email-verified/{recordId}/{token}): GET shows a button, only
 * the POST uses the token (mail scanners open links).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AuthError } from "../../errors.js";
import { registerWithMagicLink } from "../../flows/registration/registration.js";
import { registerWithPassword, resendVerification } from "../../flows/registration/registration.js";
import { describeVerificationLink, verifyEmail, type VerificationLinkInfo } from "../../flows/registration/verification.js";
import { contextOf } from "../../http/tenant.js";
import { EmailField, NameField, PasswordField } from "../../http/schemas.js";
import { html, type Html } from "../html.js";
import { botWidget, emailField, field, form, sendPage, type FormError } from "../layout.js";
import { PASSWORD_HINT } from "../form-errors.js";
import { formValues, isInvalidToken, maxLengthOf, readFields, type FieldRule, type FormValues } from "../forms.js";
import { checkEmailPath, pagePaths, withNotice } from "../paths.js";
import { handleForm, page, rememberVerifiedEmail, type PageDeps } from "./common.js";
import { continueWithProviders } from "./federation-pages.js";
import { readLinkParams, tokenPageRoutes } from "./token-page.js";

const hide = { schema: { hide: true } };
const BOT = "bot-challenge-response";
/** What each form posted here names in data-latch-form and gives handleForm: one operation, whose words its 429 takes (hosted-pages.md#refusals). */
const OPERATIONS = {
  register: "registerWithPassword",
  registerEmailOnly: "registerWithMagicLink",
  resend: "resendVerification",
  verifyEmail: "verifyEmail",
} as const;
const EMAIL_RULE: FieldRule = { name: "email", what: "your email address", max: maxLengthOf(EmailField) };
const NAME_RULE: FieldRule = { name: "name", what: "your name", max: maxLengthOf(NameField) };
const PASSWORD_RULE: FieldRule = { name: "password", what: "a password", max: maxLengthOf(PasswordField), keepSpaces: true };

function registerForm(request: FastifyRequest, values: FormValues, errors: FormError[], providers: Html): Html {
  return html`${form({
    operation: OPERATIONS.register,
    action: pagePaths.register,
    submit: "Register",
    content: html`${field({ name: "name", label: "Name", autocomplete: "name", value: values.name, errors })}
${emailField(values.email, errors)}
${field({ name: "password", label: "Password", type: "password", autocomplete: "new-password", hint: PASSWORD_HINT, errors })}
${botWidget(request.tenant)}`,
  })}
${providers}
<p>Prefer no password? <a href="${pagePaths.registerEmailOnly}">Register with your email only</a>: you log in with a link we email you.</p>
<p>Already registered? <a href="${pagePaths.login}">Log in</a>. No confirmation email? <a href="${pagePaths.resendVerification}">Send it again</a>.</p>`;
}

function registerEmailOnlyForm(request: FastifyRequest, values: FormValues, errors: FormError[]): Html {
  return html`<p>You will log in with a one-time link sent to this address, no password needed.</p>
${form({
  operation: OPERATIONS.registerEmailOnly,
  action: pagePaths.registerEmailOnly,
  submit: "Register",
  content: html`${field({ name: "name", label: "Name", autocomplete: "name", value: values.name, errors })}
${emailField(values.email, errors)}
${botWidget(request.tenant)}`,
})}
<p>Want a password instead? <a href="${pagePaths.register}">Register with a password</a>.</p>`;
}

function resendForm(request: FastifyRequest, values: FormValues, errors: FormError[]): Html {
  return html`<p>Enter the address you registered with and we will send the confirmation email again.</p>
${form({ operation: OPERATIONS.resend, submit: "Send the email again", content: html`${emailField(values.email, errors)}${botWidget(request.tenant)}` })}`;
}

/**
 * contract.md#d18: a link that carries no password (a resend, or an email-only registration) offers to choose
 * one; left empty, the account is verified without a password. A registration's link names the
 * name it was made with, so someone whose address was registered by another can tell.
 */
/** decisions.md#pending-imports: an imported member's resend link keeps the password of the system they came from. */
export const KEEPS_IMPORTED_PASSWORD = "Leave it empty to keep the password you already had, or choose a new one now.";

function verifyEmailForm(errors: FormError[], linkUsable: boolean, info: VerificationLinkInfo | undefined): Html {
  if (!linkUsable) return html`<p><a href="${pagePaths.resendVerification}">Send a new confirmation email</a></p>`;
  const madeBy =
    info?.registeredName === undefined
      ? html``
      : html`<p>This link confirms a registration made with the name <strong>${info.registeredName}</strong>. \
If you did not make it, do not press the button: <a href="${pagePaths.resendVerification}">send yourself a new confirmation email</a> instead.</p>`;
  const choosePassword =
    info && !info.setsPassword
      ? html`<p>${info.keepsImportedPassword ? KEEPS_IMPORTED_PASSWORD : "This link does not set a password. Choose one now, or leave it empty to log in with links we email you."}</p>
${field({ name: "password", label: "Choose a password (optional)", type: "password", autocomplete: "new-password", hint: PASSWORD_HINT, required: false, errors })}`
      : html``;
  return html`${madeBy}<p>Press the button to confirm your email address.</p>
${form({ operation: OPERATIONS.verifyEmail, submit: "Confirm email address", content: choosePassword })}
${errors.length > 0 ? html`<p><a href="${pagePaths.resendVerification}">Send a new confirmation email</a></p>` : ""}`;
}

/** What the page says about the link: only for a live link of the shape Latch issues. */
async function linkInfo(deps: PageDeps["deps"], request: FastifyRequest): Promise<VerificationLinkInfo | undefined> {
  const link = readLinkParams(request);
  return link && describeVerificationLink(deps, request.tenant, link.recordId, link.token);
}

export async function registrationPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const show = (request: FastifyRequest, reply: FastifyReply, title: string, body: Html, errors: FormError[] = [], status = 200) =>
    sendPage(reply, status, page(deps, request, { title, body, errors, botGuarded: true }));

  app.get(pagePaths.register, hide, async (request, reply) =>
    show(request, reply, "Register", registerForm(request, {}, [], await continueWithProviders(deps, request))),
  );
  app.post(pagePaths.register, hide, async (request, reply) => {
    const values = formValues(request);
    return handleForm(
      reply,
      OPERATIONS.register,
      ["name", "email", "password"],
      async (errors) =>
        page(deps, request, {
          title: "Register",
          body: registerForm(request, values, errors, await continueWithProviders(deps, request)),
          errors,
          botGuarded: true,
        }),
      async () => {
        const { name, email, password } = readFields(values, [NAME_RULE, EMAIL_RULE, PASSWORD_RULE]);
        await registerWithPassword(deps, request.tenant, { name: name!, email: email!, password: password!, botToken: values[BOT] }, contextOf(request));
        return reply.redirect(checkEmailPath("registration"), 303);
      },
    );
  });

  app.get(pagePaths.registerEmailOnly, hide, async (request, reply) =>
    show(request, reply, "Register with your email only", registerEmailOnlyForm(request, {}, [])),
  );
  app.post(pagePaths.registerEmailOnly, hide, async (request, reply) => {
    const values = formValues(request);
    return handleForm(
      reply,
      OPERATIONS.registerEmailOnly,
      ["name", "email"],
      (errors) =>
        page(deps, request, { title: "Register with your email only", body: registerEmailOnlyForm(request, values, errors), errors, botGuarded: true }),
      async () => {
        const { name, email } = readFields(values, [NAME_RULE, EMAIL_RULE]);
        await registerWithMagicLink(deps, request.tenant, { name: name!, email: email!, botToken: values[BOT] }, contextOf(request));
        return reply.redirect(checkEmailPath("registration"), 303);
      },
    );
  });

  // contract.md#spec-4-6 names /resend-verification as a page of the tenant: served there and under /ui/.
  for (const path of [pagePaths.resendVerification, "/resend-verification"]) {
    app.get(path, hide, async (request, reply) => show(request, reply, "Send the confirmation email again", resendForm(request, {}, [])));
    app.post(path, hide, async (request, reply) => {
      const values = formValues(request);
      return handleForm(
        reply,
        OPERATIONS.resend,
        ["email"],
        (errors) => page(deps, request, { title: "Send the confirmation email again", body: resendForm(request, values, errors), errors, botGuarded: true }),
        async () => {
          const { email } = readFields(values, [EMAIL_RULE]);
          await resendVerification(deps, request.tenant, { email: email!, botToken: values[BOT] }, contextOf(request));
          return reply.redirect(checkEmailPath("verification"), 303);
        },
      );
    });
  }

  // The verification link's page. Its GET changes nothing; the POST uses the token once.
  const verifyPage = async (request: FastifyRequest, errors: FormError[], alive: boolean) =>
    page(deps, request, {
      title: "Confirm your email address",
      body: verifyEmailForm(errors, alive, alive ? await linkInfo(deps, request) : undefined),
      errors,
    });
  tokenPageRoutes(app, "email-verified", {
    // A used or expired link shows the way to a new one, never a button that can only fail (hosted-pages.md#every-page-has-a-next-step).
    isLive: async (request, link) => (await describeVerificationLink(deps, request.tenant, link.recordId, link.token)) !== undefined,
    render: verifyPage,
    submit: async (request, reply) => {
      const link = readLinkParams(request);
      const values = formValues(request);
      const info = await linkInfo(deps, request);
      const render = (errors: FormError[], error: unknown) =>
        page(deps, request, { title: "Confirm your email address", body: verifyEmailForm(errors, link !== undefined && !isInvalidToken(error), info), errors });
      return handleForm(reply, OPERATIONS.verifyEmail, ["password"], render, async () => {
        if (!link) throw new AuthError("invalid_token");
        const offered = info !== undefined && !info.setsPassword;
        const password = offered && values.password ? readFields(values, [PASSWORD_RULE]).password : undefined;
        const { passwordSet, email } = await verifyEmail(deps, request.tenant, { ...link, password }, contextOf(request));
        // hosted-pages.md#login-email-after-verification: the next page fills in the address just confirmed.
        rememberVerifiedEmail(reply, passwordSet ? pagePaths.login : pagePaths.magicLink, email);
        return reply.redirect(passwordSet ? withNotice(pagePaths.login, "email-verified") : withNotice(pagePaths.magicLink, "email-verified-no-password"), 303);
      });
    },
  });
}

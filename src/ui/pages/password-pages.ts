/**
 * Forgot password, the reset link's page (contract.md#spec-4-6 /reset-password/{recordId}/{token}; GET shows
 * the form, only the POST uses the token) and change password for a logged-in member.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AuthError } from "../../errors.js";
import { changePassword } from "../../flows/password/password-change.js";
import { getMe } from "../../flows/account/self-service.js";
import { isLinkLive } from "../../flows/kernel/one-time-tokens.js";
import { requestPasswordReset, resetPassword } from "../../flows/password/password-reset.js";
import { EmailField, PasswordField } from "../../http/schemas.js";
import { contextOf } from "../../http/tenant.js";
import { html, type Html } from "../html.js";
import { botWidget, emailField, field, form, sendPage, type FormError } from "../layout.js";
import { PASSWORD_HINT } from "../form-errors.js";
import { formValues, isInvalidToken, maxLengthOf, readFields, type FieldRule, type FormValues } from "../forms.js";
import { checkEmailPath, pagePaths, withNotice } from "../paths.js";
import { handleForm, noticeOf, page, rememberedLoginEmail, withSession, type PageDeps } from "./common.js";
import { readLinkParams, tokenPageRoutes } from "./token-page.js";

const hide = { schema: { hide: true } };
const EMAIL_RULE: FieldRule = { name: "email", what: "your email address", max: maxLengthOf(EmailField) };
const NEW_PASSWORD_RULE: FieldRule = { name: "newPassword", what: "a new password", max: maxLengthOf(PasswordField), keepSpaces: true };
/** What each form posted here names in data-latch-form and gives handleForm: one operation, whose words its 429 takes (hosted-pages.md#refusals). */
const OPERATIONS = { forgot: "requestPasswordReset", reset: "resetPassword", change: "changePassword" } as const;
const CURRENT_PASSWORD_RULE: FieldRule = { name: "currentPassword", what: "your current password", max: maxLengthOf(PasswordField), keepSpaces: true };

function forgotForm(request: FastifyRequest, values: FormValues, errors: FormError[]): Html {
  return html`<p>Enter the address you registered with. If it belongs to an account, we will email you a link to set a new password.</p>
${form({
  operation: OPERATIONS.forgot,
  action: pagePaths.forgotPassword,
  submit: "Email me a reset link",
  content: html`${emailField(values.email, errors)}${botWidget(request.tenant)}`,
})}
<p><a href="${pagePaths.login}">Back to log in</a></p>`;
}

function newPasswordField(errors: FormError[]): Html {
  return field({ name: "newPassword", label: "New password", type: "password", autocomplete: "new-password", hint: PASSWORD_HINT, errors });
}

function resetForm(errors: FormError[], usable: boolean): Html {
  if (!usable) return html`<p><a href="${pagePaths.forgotPassword}">Request a new reset link</a></p>`;
  return form({ operation: OPERATIONS.reset, submit: "Set new password", content: newPasswordField(errors) });
}

function changeForm(errors: FormError[]): Html {
  return html`${form({
    operation: OPERATIONS.change,
    action: pagePaths.changePassword,
    submit: "Change password",
    content: html`${field({ name: "currentPassword", label: "Current password", type: "password", autocomplete: "current-password", errors })}
${newPasswordField(errors)}`,
  })}
<p>Other devices where you are logged in will be logged out.</p>
<p><a href="${pagePaths.account}">Back to your account</a></p>`;
}

const NO_PASSWORD_BODY = html`<p>Your account has no password yet: you sign in another way, such as with links we email you.</p>
<p><a href="${pagePaths.forgotPassword}">Set a password</a>: we email you a link to choose one.</p>
<p><a href="${pagePaths.account}">Back to your account</a></p>`;

export async function passwordPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const forgotPage = (request: FastifyRequest, values: FormValues, errors: FormError[]) =>
    page(deps, request, { title: "Forgot your password?", body: forgotForm(request, values, errors), errors, botGuarded: true });

  // After "This wasn't me" (hosted-pages.md#every-page-has-a-next-step): the notice says what happened, and the address the account has now is filled in.
  app.get(pagePaths.forgotPassword, hide, async (request, reply) => {
    const notice = noticeOf(request);
    const email = notice === undefined ? undefined : rememberedLoginEmail(request, maxLengthOf(EmailField));
    return sendPage(
      reply,
      200,
      page(deps, request, { title: "Forgot your password?", body: forgotForm(request, email === undefined ? {} : { email }, []), notice, botGuarded: true }),
    );
  });
  app.post(pagePaths.forgotPassword, hide, async (request, reply) => {
    const values = formValues(request);
    return handleForm(
      reply,
      OPERATIONS.forgot,
      ["email"],
      (errors) => forgotPage(request, values, errors),
      async () => {
        const { email } = readFields(values, [EMAIL_RULE]);
        await requestPasswordReset(deps, request.tenant, { email: email!, botToken: values["bot-challenge-response"] }, contextOf(request));
        return reply.redirect(checkEmailPath("reset"), 303);
      },
    );
  });

  tokenPageRoutes(app, "reset-password", {
    render: (request, errors, alive) => page(deps, request, { title: "Set a new password", body: resetForm(errors, alive), errors }),
    // contract.md#issue-16: a used or expired link shows no form to fill in for nothing.
    isLive: (request, link) => isLinkLive(deps, request.tenant, link, "password_reset"),
    submit: async (request, reply) => {
      const link = readLinkParams(request);
      const values = formValues(request);
      const render = (errors: FormError[], error: unknown) =>
        page(deps, request, { title: "Set a new password", body: resetForm(errors, link !== undefined && !isInvalidToken(error)), errors });
      return handleForm(reply, OPERATIONS.reset, ["newPassword"], render, async () => {
        if (!link) throw new AuthError("invalid_token");
        const { newPassword } = readFields(values, [NEW_PASSWORD_RULE]);
        await resetPassword(deps, request.tenant, { ...link, newPassword: newPassword! }, contextOf(request));
        return reply.redirect(withNotice(pagePaths.login, "password-reset"), 303);
      });
    },
  });

  // A member without a password (email-only, passkey or federated) has no current password to give: the page
  // offers to set one instead of a form they cannot fill in (hosted-pages.md#every-page-has-a-next-step).
  app.get(pagePaths.changePassword, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const { hasPassword } = await getMe(deps, request.tenant, session);
      return hasPassword
        ? sendPage(reply, 200, page(deps, request, { title: "Change your password", body: changeForm([]), signedIn: true }))
        : sendPage(reply, 200, page(deps, request, { title: "Set a password", body: NO_PASSWORD_BODY, signedIn: true }));
    }),
  );
  app.post(pagePaths.changePassword, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      const render = (errors: FormError[]) => page(deps, request, { title: "Change your password", body: changeForm(errors), errors, signedIn: true });
      return handleForm(reply, OPERATIONS.change, ["currentPassword", "newPassword"], render, async () => {
        const { currentPassword, newPassword } = readFields(values, [CURRENT_PASSWORD_RULE, NEW_PASSWORD_RULE]);
        await changePassword(deps, request.tenant, session, { currentPassword: currentPassword!, newPassword: newPassword! }, contextOf(request));
        return reply.redirect(withNotice(pagePaths.account, "password-changed"), 303);
      });
    }),
  );
}

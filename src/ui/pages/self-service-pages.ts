/**
 * contract.md#d24 in the hosted pages: the member's profile (name, email), where they are signed in, and
 * deleting the account; and the pages of the two links contract.md#d24 mails: /email-change/… (confirm a new
 * address) and /secure-account/… ("this wasn't me"). Plain form posts: each calls the same flow as
 * the JSON route, then redirects (303) or shows the form again with the error.
 */
import { describeDevice } from "../../core/devices.js";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AuthError } from "../../errors.js";
import { confirmEmailChange, requestEmailChange } from "../../flows/account/email-change.js";
import { secureAccount } from "../../flows/account/secure-account.js";
import { changeName, deleteAccount, getMe, listSessions, revokeOtherSessions, revokeSession, type MeView } from "../../flows/account/self-service.js";
import type { Reauthentication } from "../../flows/kernel/reauthentication.js";
import type { ActiveSession } from "../../flows/kernel/sessions.js";
import { clearSessionCookie } from "../../http/session-cookie.js";
import { EmailField, NameField, PasswordField, PublicIdField, SecondFactorCodeField } from "../../http/schemas.js";
import { contextOf } from "../../http/tenant.js";
import { html, type Html } from "../html.js";
import { field, form, hidden, sendPage, type FormError } from "../layout.js";
import { formValues, isInvalidToken, maxLengthOf, readFields, type FieldRule, type FormValues } from "../forms.js";
import { checkEmailPath, pagePaths, withNotice } from "../paths.js";
import { findSession, handleForm, noticeOf, page, rememberResetEmail, withSession, type PageDeps } from "./common.js";
import { readLinkParams, tokenPageRoutes } from "./token-page.js";
import { describeDuration, FRESH_SESSION_MS } from "../../rules.js";

const hide = { schema: { hide: true } };
const NAME_RULE: FieldRule = { name: "name", what: "your name", max: maxLengthOf(NameField) };
const NEW_EMAIL_RULE: FieldRule = { name: "newEmail", what: "the new email address", max: maxLengthOf(EmailField) };
const PASSWORD_RULE: FieldRule = { name: "password", what: "your password", max: maxLengthOf(PasswordField), keepSpaces: true };
/** What each form posted here names in data-latch-form and gives handleForm: one operation, whose words its 429 takes (hosted-pages.md#refusals). */
const OPERATIONS = {
  name: "updateMe",
  email: "changeEmail",
  delete: "deleteAccount",
  confirmEmailChange: "confirmEmailChange",
  secureAccount: "secureAccount",
} as const;
const CODE_RULE: FieldRule = { name: "twoFACode", what: "a code from your authenticator app", max: maxLengthOf(SecondFactorCodeField) };

export function time(ms: number | string): Html {
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.replace("T", " ").replace(/\.\d+Z$/, " UTC")}</time>`;
}

/** What a member without a password is told instead of a password field. */
const NO_PASSWORD_HINT = html`<p class="hint">Your account has no password: this works within ${describeDuration(FRESH_SESSION_MS)} of logging in. \
If it is refused, log in again with an emailed link.</p>`;

/** The re-authentication fields this member needs (contract.md#d24): the password if they have one, a code if 2FA is on. */
export function reauthFields(me: MeView, errors: FormError[]): Html {
  const password = me.hasPassword
    ? field({ name: "password", label: "Your password", type: "password", autocomplete: "current-password", errors })
    : NO_PASSWORD_HINT;
  const code =
    me._2fa_status === "Enabled"
      ? field({ name: "twoFACode", label: "Code from your authenticator app, or a recovery code", autocomplete: "one-time-code", errors })
      : "";
  return html`${password}
${code}`;
}

export function readReauth(values: FormValues, me: MeView): Reauthentication {
  const rules = [...(me.hasPassword ? [PASSWORD_RULE] : []), ...(me._2fa_status === "Enabled" ? [CODE_RULE] : [])];
  const read = readFields(values, rules);
  return { ...(read.password !== undefined ? { password: read.password } : {}), ...(read.twoFACode !== undefined ? { twoFACode: read.twoFACode } : {}) };
}

function profileBody(me: MeView, errors: FormError[], values: FormValues = {}): Html {
  return html`<h2 id="name-title">Your name</h2>
${form({
  operation: OPERATIONS.name,
  action: pagePaths.accountName,
  labelledBy: "name-title",
  submit: "Save name",
  content: field({ name: "name", label: "Name", autocomplete: "name", value: values.name ?? me.name, errors }),
})}
<h2 id="email-title">Your email address</h2>
<p>Now: <strong>${me.email}</strong></p>
${form({
  operation: OPERATIONS.email,
  action: pagePaths.accountEmail,
  labelledBy: "email-title",
  submit: "Send a confirmation link",
  content: html`<p>We send a link to the new address. Your email changes when you open it, and we tell your current address.</p>
${field({ name: "newEmail", label: "New email address", type: "email", autocomplete: "email", value: values.newEmail, errors })}
${reauthFields(me, errors)}`,
})}
<p><a href="${pagePaths.account}">Back to your account</a></p>`;
}

type SessionView = Awaited<ReturnType<typeof listSessions>>[number];

/** One session in the list: its browser, where and when, and (unless it is this one) a form to end it. */
function sessionItem(s: SessionView, i: number): Html {
  const end = form({
    operation: "revokeSession",
    action: pagePaths.accountSessionRevoke,
    labelledBy: `session-${i}`,
    submit: "Sign out this session",
    submitClass: "secondary",
    content: html`<span class="visually-hidden" id="session-${i}">Session ${i + 1}</span>${hidden("id", s.id)}`,
  });
  return html`<li>
<p><strong>${describeDevice(s.userAgent) ?? s.userAgent ?? "Unknown browser"}</strong>${s.current ? html` <span class="badge">This browser</span>` : ""}</p>
<p class="hint">From ${s.ip ?? "an unknown address"}${s.country ? html` (${s.country})` : ""}. \
Logged in ${time(s.createdAt)}; last active ${time(s.lastSeenAt)}.</p>
${s.current ? "" : end}
</li>`;
}

function sessionsBody(sessions: SessionView[]): Html {
  const others = sessions.filter((s) => !s.current);
  const endOthers =
    others.length > 0
      ? form({
          operation: "revokeOtherSessions",
          action: pagePaths.accountSessionsRevokeOthers,
          submit: "Sign out everywhere else",
          submitClass: "danger",
          content: html``,
        })
      : html`<p>You are not signed in anywhere else.</p>`;
  return html`<ul class="sessions">${sessions.map(sessionItem)}</ul>
${endOthers}
<p><a href="${pagePaths.account}">Back to your account</a></p>`;
}

function deleteBody(me: MeView, errors: FormError[]): Html {
  return html`<p>This deletes your account and everything we hold about it: your sessions, your sign-in history and your settings. It cannot be undone.</p>
${form({ operation: OPERATIONS.delete, action: pagePaths.accountDelete, submit: "Delete my account", submitClass: "danger", content: reauthFields(me, errors) })}
<p><a href="${pagePaths.account}">Keep my account</a></p>`;
}

export async function selfServicePages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const show = (request: FastifyRequest, title: string, body: Html, errors: FormError[] = [], notice?: string) =>
    page(deps, request, { title, body, errors, notice, signedIn: true });
  const me = (request: FastifyRequest, session: ActiveSession) => getMe(deps, request.tenant, session);

  app.get(pagePaths.accountProfile, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) =>
      sendPage(reply, 200, show(request, "Name and email", profileBody(await me(request, session), []), [], noticeOf(request))),
    ),
  );

  app.post(pagePaths.accountName, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      const profile = await me(request, session);
      return handleForm(
        reply,
        OPERATIONS.name,
        ["name"],
        (errors) => show(request, "Name and email", profileBody(profile, errors, values), errors),
        async () => {
          const { name } = readFields(values, [NAME_RULE]);
          await changeName(deps, request.tenant, session, name!, contextOf(request));
          return reply.redirect(withNotice(pagePaths.account, "name-changed"), 303);
        },
      );
    }),
  );

  app.post(pagePaths.accountEmail, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      const profile = await me(request, session);
      return handleForm(
        reply,
        OPERATIONS.email,
        ["newEmail", "password", "twoFACode"],
        (errors) => show(request, "Name and email", profileBody(profile, errors, values), errors),
        async () => {
          const { newEmail } = readFields(values, [NEW_EMAIL_RULE]);
          await requestEmailChange(deps, request.tenant, session, { newEmail: newEmail!, ...readReauth(values, profile) }, contextOf(request));
          return reply.redirect(checkEmailPath("email-change"), 303);
        },
      );
    }),
  );

  app.get(pagePaths.accountSessions, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) =>
      sendPage(reply, 200, show(request, "Where you are signed in", sessionsBody(await listSessions(deps, request.tenant, session)), [], noticeOf(request))),
    ),
  );

  app.post(pagePaths.accountSessionRevoke, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const id = formValues(request).id ?? "";
      const render = async (errors: FormError[]) =>
        show(request, "Where you are signed in", sessionsBody(await listSessions(deps, request.tenant, session)), errors);
      try {
        await revokeSession(deps, request.tenant, session, id.slice(0, maxLengthOf(PublicIdField)), contextOf(request));
      } catch (error) {
        // Already ended (another tab, another device): the list, as it is now, says so.
        if (!(error instanceof AuthError) || error.code !== "not_found") throw error;
        return sendPage(reply, 404, await render([{ message: "That session has already ended." }]));
      }
      return reply.redirect(withNotice(pagePaths.accountSessions, "session-ended"), 303);
    }),
  );

  app.post(pagePaths.accountSessionsRevokeOthers, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      await revokeOtherSessions(deps, request.tenant, session, contextOf(request));
      return reply.redirect(withNotice(pagePaths.accountSessions, "other-sessions-ended"), 303);
    }),
  );

  app.get(pagePaths.accountDelete, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) =>
      sendPage(reply, 200, show(request, "Delete your account", deleteBody(await me(request, session), []))),
    ),
  );

  app.post(pagePaths.accountDelete, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      const profile = await me(request, session);
      return handleForm(
        reply,
        OPERATIONS.delete,
        ["password", "twoFACode"],
        (errors) => show(request, "Delete your account", deleteBody(profile, errors), errors),
        async () => {
          await deleteAccount(deps, request.tenant, session, readReauth(values, profile), contextOf(request));
          clearSessionCookie(reply);
          return reply.redirect(withNotice(pagePaths.login, "account-deleted"), 303);
        },
      );
    }),
  );

  // The links contract.md#d24 mails. GET shows a button and changes nothing; the POST uses the token once.
  const emailChangeForm = (errors: FormError[], alive: boolean) =>
    alive
      ? form({
          operation: OPERATIONS.confirmEmailChange,
          submit: "Confirm my new email address",
          content: html`<p>Open this page only if you asked to change the email address of your account.</p>`,
        })
      : html`<p>${errors.length > 0 ? "" : "This link no longer works."} <a href="${pagePaths.accountProfile}">Ask for a new one</a> from your account.</p>`;
  tokenPageRoutes(app, "email-change", {
    render: (request, errors, alive) => page(deps, request, { title: "Confirm your new email address", body: emailChangeForm(errors, alive), errors }),
    submit: async (request, reply) => {
      const link = readLinkParams(request);
      const render = (errors: FormError[], error: unknown) =>
        page(deps, request, { title: "Confirm your new email address", body: emailChangeForm(errors, link !== undefined && !isInvalidToken(error)), errors });
      return handleForm(reply, OPERATIONS.confirmEmailChange, [], render, async () => {
        if (!link) throw new AuthError("invalid_token");
        const session = await findSession(deps, request);
        const keep = session && session.data.recordId === link.recordId ? session.idHash : undefined;
        await confirmEmailChange(deps, request.tenant, link, contextOf(request), keep);
        return reply.redirect(withNotice(keep ? pagePaths.account : pagePaths.login, "email-changed"), 303);
      });
    },
  });

  const secureForm = (errors: FormError[], alive: boolean) =>
    alive
      ? html`<p>If you did not do what the email told you about, someone else may be using your account. \
This signs you out everywhere, cancels every link we sent, and asks for a new password at your next login. \
If your email address was changed, you get it back.</p>
${form({ operation: OPERATIONS.secureAccount, submit: "Secure my account", submitClass: "danger", content: html`` })}`
      : html`<p>${errors.length > 0 ? "" : "This link no longer works."} \
If you still think someone else uses your account, <a href="${pagePaths.forgotPassword}">reset your password</a>.</p>`;
  tokenPageRoutes(app, "secure-account", {
    render: (request, errors, alive) => page(deps, request, { title: "This wasn't me", body: secureForm(errors, alive), errors }),
    submit: async (request, reply) => {
      const link = readLinkParams(request);
      const render = (errors: FormError[], error: unknown) =>
        page(deps, request, { title: "This wasn't me", body: secureForm(errors, link !== undefined && !isInvalidToken(error)), errors });
      return handleForm(reply, OPERATIONS.secureAccount, [], render, async () => {
        if (!link) throw new AuthError("invalid_token");
        const { emailNotRestored, email } = await secureAccount(deps, request.tenant, link, contextOf(request));
        clearSessionCookie(reply);
        if (email !== undefined) rememberResetEmail(reply, email);
        return reply.redirect(withNotice(pagePaths.forgotPassword, emailNotRestored ? "account-secured-email-kept" : "account-secured"), 303);
      });
    },
  });
}

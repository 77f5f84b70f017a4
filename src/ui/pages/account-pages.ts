/**
 * The logged-in member's pages: the account (session facts, logout), and two-factor enrolment:
 * setup (QR code and the secret for manual entry) -> first code -> recovery codes shown once; and
 * the disable and new-recovery-codes forms. Secrets and codes appear only on no-store answers.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { MINUTE, SECOND } from "../../core/durations.js";
import { randomToken } from "../../core/random.js";
import type { Deps } from "../../deps.js";
import {
  disableTwoFactor,
  enableTwoFactor,
  pendingTwoFactorSetup,
  regenerateRecoveryCodes,
  setUpTwoFactor,
  type TwoFactorSetup,
} from "../../flows/two-factor/two-factor.js";
import { getMe, type MeView } from "../../flows/account/self-service.js";
import { listConnections } from "../../flows/federation/connections.js";
import type { ActiveSession } from "../../flows/kernel/sessions.js";
import { PasswordField, SecondFactorCodeField } from "../../http/schemas.js";
import { contextOf } from "../../http/tenant.js";
import { html, type Html } from "../html.js";
import { field, form, sendPage, type FormError } from "../layout.js";
import { FormInvalid, formValues, maxLengthOf, readFields, type FieldRule } from "../forms.js";
import { pagePaths, withNotice } from "../paths.js";
import { handleForm, noticeOf, page, withSession, type PageDeps } from "./common.js";
import { TOTP_PARAMETERS } from "../../rules.js";

const hide = { schema: { hide: true } };
/** Each form's API operation, named once: its data-latch-form and its refusals' words (hosted-pages.md#refusals). */
const OPERATIONS = {
  setUp: "setUpTwoFactor",
  enable: "enableTwoFactor",
  recoveryCodes: "regenerateRecoveryCodes",
  disable: "disableTwoFactor",
} as const;
const CODE_RULE: FieldRule = { name: "code", what: "the code", max: maxLengthOf(SecondFactorCodeField) };

function formatTime(unixSeconds: number): string {
  return new Date(unixSeconds * 1000)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, " UTC");
}

const CHANGE_PASSWORD_LINK = html`<a href="${pagePaths.changePassword}">Change your password</a>`;
const SET_PASSWORD_LINK = html`<a href="${pagePaths.forgotPassword}">Set a password</a> (we email you a link)`;

/** `providers`: the tenant has connections, so the member has identities to see or link (identities-page.ts). */
function accountBody(session: ActiveSession, me: MeView, providers: boolean): Html {
  const data = session.data;
  return html`<dl>
<dt>Email</dt><dd>${me.email}</dd>
<dt>Name</dt><dd>${me.name}</dd>
<dt>Member id</dt><dd>${data.recordId}</dd>
<dt>Logged in at</dt><dd><time datetime="${new Date(data.iat * 1000).toISOString()}">${formatTime(data.iat)}</time></dd>
<dt>Session expires</dt><dd><time datetime="${new Date(data.exp * 1000).toISOString()}">${formatTime(data.exp)}</time></dd>
<dt>Two-factor authentication</dt><dd>${data.is2FAEnabled ? "On" : "Off"}</dd>
</dl>
${data.require2FASetup ? html`<p class="note">This site asks you to <a href="${pagePaths.twoFactor}">turn on two-factor authentication</a>.</p>` : ""}
${data.passwordChangePending ? html`<p class="note">Please <a href="${pagePaths.changePassword}">change your password</a>.</p>` : ""}
<ul>
<li><a href="${pagePaths.accountProfile}">Change your name or email address</a></li>
<li><a href="${pagePaths.accountSessions}">See where you are signed in</a></li>
<li><a href="${pagePaths.accountPasskeys}">Passkeys: sign in without a password</a></li>
${providers ? html`<li><a href="${pagePaths.accountIdentities}">Linked accounts: sign in with another provider</a></li>` : ""}
<li>${me.hasPassword ? CHANGE_PASSWORD_LINK : SET_PASSWORD_LINK}</li>
<li><a href="${pagePaths.twoFactor}">${data.is2FAEnabled ? "Manage two-factor authentication" : "Turn on two-factor authentication"}</a></li>
<li><a href="${pagePaths.accountDelete}">Delete your account</a></li>
</ul>
${form({ operation: "logout", action: pagePaths.logout, submit: "Log out", submitClass: "secondary", content: html`` })}`;
}

/**
 * contract.md#d30: turning 2FA on re-authenticates, and this page asks at the first step: the password, or for
 * a member without one nothing (a session at most FRESH_SESSION_MS old does; an older one is told to sign in again).
 */
function setupForm(hasPassword: boolean, errors: FormError[]): Html {
  const content = hasPassword
    ? html`<p>Confirm it's you first.</p>${field({ name: "password", label: "Password", type: "password", autocomplete: "current-password", errors })}`
    : html``;
  return form({ operation: OPERATIONS.setUp, action: pagePaths.twoFactorSetup, submit: "Set up two-factor authentication", content });
}

function twoFactorOverview(session: ActiveSession, hasPassword: boolean, errors: FormError[]): Html {
  if (!session.data.is2FAEnabled) {
    return html`<p>Two-factor authentication is off. With it on, logging in also asks for a code from an authenticator app on your phone.</p>
${setupForm(hasPassword, errors)}
<p><a href="${pagePaths.account}">Back to your account</a></p>`;
  }
  return html`<p>Two-factor authentication is on.</p>
<h2 id="recovery-title">New recovery codes</h2>
${form({
  operation: OPERATIONS.recoveryCodes,
  action: pagePaths.recoveryCodes,
  labelledBy: "recovery-title",
  submit: "Get new recovery codes",
  content: html`<p>Your old recovery codes stop working.</p>${field({
    name: "code",
    label: "Code from your authenticator app",
    autocomplete: "one-time-code",
    errors: errors.filter((e) => e.field === "code"),
  })}`,
})}
<h2 id="disable-title">Turn off two-factor authentication</h2>
${form({
  operation: OPERATIONS.disable,
  action: pagePaths.twoFactorDisable,
  labelledBy: "disable-title",
  submit: "Turn off two-factor authentication",
  submitClass: "danger",
  content: html`<p>Confirm with your password, or with a code if your account has no password.</p>
${field({ name: "password", label: "Password", type: "password", autocomplete: "current-password", required: false, errors })}
${field({ name: "disableCode", label: "Or a code from your app or a recovery code", autocomplete: "one-time-code", required: false, errors })}`,
})}
<p><a href="${pagePaths.account}">Back to your account</a></p>`;
}

/** The enrolment step: the QR code, the secret as text, and the first code (shown again, the same, after a wrong code). */
function enableForm(setup: TwoFactorSetup, errors: FormError[]): Html {
  return html`<ol>
<li>Open an authenticator app on your phone and add an account.</li>
<li>Scan this QR code, or enter the key below by hand.</li>
<li>Type the ${TOTP_PARAMETERS.digits}-digit code the app shows. Turning it on logs you out everywhere else.</li>
</ol>
<img class="qr" src="${setup.qrCodeDataUrl}" alt="QR code for your authenticator app. If you cannot scan it, enter the key shown below.">
<p>Key for manual entry: <code class="secret" id="totp-secret">${setup.secret}</code></p>
${form({
  operation: OPERATIONS.enable,
  action: pagePaths.twoFactorEnable,
  submit: "Turn on two-factor authentication",
  content: field({ name: "code", label: "Code from your authenticator app", autocomplete: "one-time-code", inputmode: "numeric", errors }),
})}`;
}

/**
 * The codes, each numbered in its own box beside it (contract.md#issue-16: the list's own markers ran into the
 * codes and a code broke across lines on a phone). The number is for the eye and the paper copy;
 * a screen reader has the list's position, so it is hidden from it, and it is left out of a copy.
 */
function recoveryCodeItem(code: string, i: number): Html {
  return html`<li><span class="code-number" aria-hidden="true">${i + 1}.</span> <code>${code}</code></li>`;
}

/**
 * hosted-pages.md#recovery-codes-once: the codes just made are not the POST's answer (Back to it
 * would ask to send the form again) but a one-time view: sealed with the secrets key into an
 * HttpOnly cookie of this page alone, bound to the session, for at most CODES_VIEW_MS, and claimed
 * once in the counters store, so a copy of the cookie shows nothing. The codes are never in a URL.
 */
const CODES_VIEW_COOKIE = { name: "recovery_codes_view", path: pagePaths.recoveryCodes } as const;
const CODES_VIEW_MS = 5 * MINUTE;
const CODES_VIEW_NOTICES = {
  enabled: "Two-factor authentication is on. Your other sessions have been logged out.",
  regenerated: "You have new recovery codes. Your old ones no longer work.",
} as const;

interface CodesView {
  id: string;
  session: string;
  expiresAt: number;
  kind: keyof typeof CODES_VIEW_NOTICES;
  codes: string[];
}

const codesViewCookieFlags = { path: CODES_VIEW_COOKIE.path, httpOnly: true, secure: true, sameSite: "strict" } as const;

/** Post, redirect, get: the codes go to the one-time view and the member to the page that shows them. */
function redirectToCodesView(deps: Deps, reply: FastifyReply, session: ActiveSession, kind: CodesView["kind"], codes: string[]): FastifyReply {
  const view: CodesView = { id: randomToken(deps.random, 16), session: session.idHash, expiresAt: deps.clock.now() + CODES_VIEW_MS, kind, codes };
  void reply.setCookie(CODES_VIEW_COOKIE.name, deps.secrets.seal(JSON.stringify(view)), { ...codesViewCookieFlags, maxAge: CODES_VIEW_MS / SECOND });
  return reply.redirect(pagePaths.recoveryCodes, 303);
}

/** The view's codes the first time this session asks within its lifetime; undefined after that, or for anything else. */
async function takeCodesView(deps: Deps, request: FastifyRequest, reply: FastifyReply, session: ActiveSession): Promise<CodesView | undefined> {
  const sealed = request.cookies[CODES_VIEW_COOKIE.name];
  if (sealed === undefined) return undefined;
  void reply.clearCookie(CODES_VIEW_COOKIE.name, codesViewCookieFlags);
  let view: CodesView;
  try {
    view = JSON.parse(deps.secrets.open(sealed)) as CodesView;
  } catch {
    return undefined;
  }
  const now = deps.clock.now();
  if (view.session !== session.idHash || !(view.expiresAt > now) || !Array.isArray(view.codes) || !Object.hasOwn(CODES_VIEW_NOTICES, view.kind))
    return undefined;
  return (await deps.counters.claimOnce(request.tenant.id, "recovery_codes_view", view.id, view.expiresAt, now)) ? view : undefined;
}

/** Back to the codes' page after they were shown, or a stale cookie: they are not shown again; new ones can be made. */
const CODES_SHOWN_BODY = html`<p>Your recovery codes were shown once, when they were made, and are not shown again: they are stored only in a form that cannot be read back.</p>
<p>If you did not save them, get new ones on the two-factor page (your old ones then stop working).</p>
<ul>
<li><a href="${pagePaths.twoFactor}">Get new recovery codes</a></li>
<li><a href="${pagePaths.account}">Continue to your account</a></li>
</ul>`;

function recoveryCodesBody(codes: string[], notice: string): Html {
  return html`<p class="notice" role="status">${notice}</p>
<p><strong>Save these recovery codes now. They are shown only this once.</strong> Each works once, to log in when you do not have your phone.</p>
<ol class="codes" aria-label="Recovery codes">${codes.map(recoveryCodeItem)}</ol>
<p><a href="${pagePaths.account}">I have saved them: continue to your account</a></p>`;
}

export async function accountPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const show = (request: FastifyRequest, title: string, body: Html, errors: FormError[] = [], notice?: string) =>
    page(deps, request, { title, body, errors, notice, signedIn: true });

  app.get(pagePaths.account, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const [me, connections] = await Promise.all([getMe(deps, request.tenant, session), listConnections(deps, request.tenant)]);
      return sendPage(reply, 200, show(request, "Your account", accountBody(session, me, connections.length > 0), [], noticeOf(request)));
    }),
  );

  const overview = async (request: FastifyRequest, session: ActiveSession, errors: FormError[]) =>
    show(request, "Two-factor authentication", twoFactorOverview(session, await hasPasswordOf(deps, request, session), errors), errors);
  const enrolment = (request: FastifyRequest, setup: TwoFactorSetup, errors: FormError[]) =>
    show(request, "Set up two-factor authentication", enableForm(setup, errors), errors);

  app.get(pagePaths.twoFactor, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) =>
      sendPage(
        reply,
        200,
        show(request, "Two-factor authentication", twoFactorOverview(session, await hasPasswordOf(deps, request, session), []), [], noticeOf(request)),
      ),
    ),
  );

  app.post(pagePaths.twoFactorSetup, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      return handleForm(
        reply,
        OPERATIONS.setUp,
        ["password"],
        (errors) => overview(request, session, errors),
        async () => {
          const { password } = readFields(values, [
            { name: "password", what: "your password", max: maxLengthOf(PasswordField), keepSpaces: true, optional: true },
          ]);
          // An empty field is no password (400, "enter your password"), never a wrong one that counts towards the lockout.
          const input = { password: password || undefined };
          await setUpTwoFactor(deps, request.tenant, session, input, contextOf(request), { requireReauthentication: true });
          return reply.redirect(pagePaths.twoFactorSetup, 303);
        },
      );
    }),
  );

  // hosted-pages.md#two-factor-setup-by-get: post, redirect, get. The page is drawn from the stored
  // enrolment, so Back or a reload asks to resend nothing and the secret never rides in a URL; once
  // 2FA is on, or with no enrolment of this session's, there is nothing to show: the 2FA page.
  app.get(pagePaths.twoFactorSetup, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const pending = await pendingTwoFactorSetup(deps, request.tenant, session);
      if (!pending) return reply.redirect(pagePaths.twoFactor, 303);
      return sendPage(reply, 200, enrolment(request, pending, []));
    }),
  );

  app.post(pagePaths.twoFactorEnable, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      // A wrong first code shows the same enrolment again, QR code included, from the stored
      // pending secret (never one posted back): the member retries with the account their app has.
      const render = async (errors: FormError[]) => {
        const pending = await pendingTwoFactorSetup(deps, request.tenant, session);
        return pending ? enrolment(request, pending, errors) : overview(request, session, errors);
      };
      return handleForm(reply, OPERATIONS.enable, ["code"], render, async () => {
        const { code } = readFields(values, [CODE_RULE]);
        // The setup step re-authenticated this session (requireReauthentication): no password here.
        const codes = await enableTwoFactor(deps, request.tenant, session, { code: code! }, contextOf(request));
        return redirectToCodesView(deps, reply, session, "enabled", codes);
      });
    }),
  );

  app.post(pagePaths.recoveryCodes, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      return handleForm(
        reply,
        OPERATIONS.recoveryCodes,
        ["code"],
        (errors) => overview(request, session, errors),
        async () => {
          const { code } = readFields(values, [CODE_RULE]);
          const codes = await regenerateRecoveryCodes(deps, request.tenant, session, code!, contextOf(request));
          // Regenerating ends no session (flows/two-factor/two-factor.ts), so the page says only what changed.
          return redirectToCodesView(deps, reply, session, "regenerated", codes);
        },
      );
    }),
  );

  app.get(pagePaths.recoveryCodes, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const view = await takeCodesView(deps, request, reply, session);
      if (!view) return sendPage(reply, 200, show(request, "Recovery codes already shown", CODES_SHOWN_BODY));
      return sendPage(reply, 200, show(request, "Save your recovery codes", recoveryCodesBody(view.codes, CODES_VIEW_NOTICES[view.kind])));
    }),
  );

  app.post(pagePaths.twoFactorDisable, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => disableFromForm(deps, request, reply, session, (errors) => overview(request, session, errors))),
  );
}

async function hasPasswordOf(deps: Deps, request: FastifyRequest, session: ActiveSession): Promise<boolean> {
  return (await getMe(deps, request.tenant, session)).hasPassword;
}

async function disableFromForm(
  deps: Deps,
  request: FastifyRequest,
  reply: Parameters<typeof sendPage>[0],
  session: ActiveSession,
  render: (errors: FormError[]) => Promise<Html>,
) {
  const values = formValues(request);
  return handleForm(reply, OPERATIONS.disable, ["password", "disableCode"], render, async () => {
    const { password, disableCode } = readFields(values, [
      { name: "password", what: "your password", max: maxLengthOf(PasswordField), keepSpaces: true, optional: true },
      { name: "disableCode", what: "a code", max: 32, optional: true },
    ]);
    if (!password && !disableCode) throw new FormInvalid([{ field: "password", message: "Enter your password or a code." }]);
    await disableTwoFactor(deps, request.tenant, session, password ? { password } : { code: disableCode }, contextOf(request));
    return reply.redirect(withNotice(pagePaths.twoFactor, "two-factor-disabled"), 303);
  });
}

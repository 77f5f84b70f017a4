/**
 * The hosted pages' frame and building blocks: the page layout (one h1, landmarks, skip link),
 * the error summary, labelled fields, the bot widget, and the headers every page is sent with.
 */
import type { FastifyReply } from "fastify";
import type { ErrorCode } from "../errors.js";
import type { Tenant } from "../model.js";
import { html, raw, type Html } from "./html.js";
import { pagePaths } from "./paths.js";

/**
 * Only this origin's scripts, styles, workers and images (plus data: for the QR code); forms post
 * only here; no framing; no <base>. The ALTCHA widget's "external" build needs no inline style and
 * runs its proof of work in workers loaded from /ui/assets (worker-src 'self').
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/**
 * `same-origin`, not `no-referrer`: with no-referrer, browsers send `Origin: null` on form posts,
 * and the CSRF origin check (contract.md#d2) would refuse every no-JavaScript form. same-origin still sends no
 * Referer to any other site, so a token URL never leaves this origin.
 */
export const REFERRER_POLICY = "same-origin";

/**
 * One error of a form: `field` is the input's name when the error is about one field; `code` the
 * contract.md#d4 code when a flow refused it. Pages decide by the code, never by the message's words.
 */
export interface FormError {
  field?: string;
  code?: ErrorCode;
  message: string;
  /** What can be done now (hosted-pages.md#refusals): links shown under the message. */
  next?: { href: string; text: string }[];
  /** Added to the message in dev mode only (pages/common.ts page()). */
  devNote?: string;
}

export interface PageInput {
  tenant: Tenant;
  /** Says what the page is: the <title> and the h1. */
  title: string;
  body: Html;
  /** Shown in the error summary at the top of the page. */
  errors?: FormError[];
  /** A confirmation shown above the content (role=status). */
  notice?: string;
  signedIn?: boolean;
  /** The page has a bot-guarded form: load the ALTCHA widget when the tenant uses it. */
  botGuarded?: boolean;
  /** Dev mode: a link to the dev inbox in the header. */
  devInbox?: boolean;
}

export function sendPage(reply: FastifyReply, status: number, page: Html): FastifyReply {
  return (
    reply
      .code(status)
      .type("text/html; charset=utf-8")
      // Pages carry tokens in their URL, the 2FA secret, recovery codes, or a password in a hidden
      // field (the 2FA login step): none of them may be kept by a browser or a shared cache.
      .header("cache-control", "no-store")
      .header("content-security-policy", PAGE_CSP)
      .header("referrer-policy", REFERRER_POLICY)
      .header("x-content-type-options", "nosniff")
      .header("x-frame-options", "DENY")
      .send(page.html)
  );
}

function errorItem(error: FormError): Html {
  const next = error.next?.length ? html`<ul class="next-steps">${error.next.map((step) => html`<li><a href="${step.href}">${step.text}</a></li>`)}</ul>` : "";
  return error.field ? html`<li><a href="#${error.field}">${error.message}</a>${next}</li>` : html`<li>${error.message}${next}</li>`;
}

/** Always present, so the script can fill it; focused on load when the server found errors. */
export function errorSummary(errors: FormError[]): Html {
  if (errors.length === 0) return html`<div id="error-summary" class="error-summary" role="alert" tabindex="-1" hidden></div>`;
  return html`<div id="error-summary" class="error-summary" role="alert" tabindex="-1" autofocus>
<h2 id="error-summary-title">There is a problem</h2>
<ul>${errors.map(errorItem)}</ul>
</div>`;
}

export interface FieldInput {
  name: string;
  label: string;
  type?: "text" | "email" | "password";
  autocomplete: string;
  value?: string;
  hint?: string;
  required?: boolean;
  inputmode?: "numeric" | "text";
  /** The browser's own check before posting; the server checks again. */
  pattern?: string;
  maxlength?: number;
  errors?: FormError[];
}

/** The email address field of the forms that ask for one (registration, links, codes, reset). */
export function emailField(value: string | undefined, errors: FormError[]): Html {
  return field({ name: "email", label: "Email address", type: "email", autocomplete: "email", value, errors });
}

/** A labelled input; its error (if any) is linked by aria-describedby and marked aria-invalid. */
export function field(input: FieldInput): Html {
  const error = input.errors?.find((e) => e.field === input.name);
  const describedBy = [error ? `${input.name}-error` : "", input.hint ? `${input.name}-hint` : ""].filter(Boolean).join(" ");
  return html`<div class="field">
<label for="${input.name}">${input.label}</label>
${input.hint ? html`<p class="hint" id="${input.name}-hint">${input.hint}</p>` : ""}
${error ? html`<p class="field-error" id="${input.name}-error"><span class="visually-hidden">Error: </span>${error.message}</p>` : ""}
<input id="${input.name}" name="${input.name}" type="${input.type ?? "text"}" autocomplete="${input.autocomplete}"${inputAttributes(input, error, describedBy)}>
</div>`;
}

/** The input's attributes after its autocomplete, each only when it applies, in a fixed order. */
function inputAttributes(input: FieldInput, error: FormError | undefined, describedBy: string): Html[] {
  const attributes = [
    input.inputmode && raw(` inputmode="${input.inputmode}"`),
    input.pattern && html` pattern="${input.pattern}"`,
    input.maxlength && html` maxlength="${input.maxlength}"`,
    input.required !== false && raw(" required"),
    input.value !== undefined && input.type !== "password" && html` value="${input.value}"`,
    error && raw(' aria-invalid="true"'),
    describedBy && html` aria-describedby="${describedBy}"`,
  ];
  return attributes.filter((attribute): attribute is Html => typeof attribute === "object");
}

export function hidden(name: string, value: string): Html {
  return html`<input type="hidden" name="${name}" value="${value}">`;
}

/**
 * The bot check inside a guarded form. ALTCHA: the widget (it fetches /auth/bot-challenge and puts
 * its solution in the `bot-challenge-response` field). `none`: nothing. Other providers need their
 * own widget and site key, which these pages do not render (docs/hosted-pages.md).
 */
export function botWidget(tenant: Tenant): Html {
  const provider = tenant.settings.botProtection.provider;
  if (provider === "none") return html``;
  if (provider === "altcha") {
    return html`<div class="bot"><altcha-widget challenge="/auth/bot-challenge" name="bot-challenge-response" auto="onfocus"></altcha-widget>
<noscript><p class="note">This form checks that you are not a bot, which needs JavaScript. Please turn JavaScript on for this site.</p></noscript></div>`;
  }
  return html`<p class="note">This site uses ${provider} bot protection, which these hosted pages cannot show. Please use the site's own sign-in pages.</p>`;
}

function navigation(signedIn: boolean, devInbox: boolean): Html {
  const links = signedIn
    ? [
        html`<li><a href="${pagePaths.account}">Account</a></li>`,
        // "Password", not "Change password": a member without one is offered to set one there.
        html`<li><a href="${pagePaths.changePassword}">Password</a></li>`,
        html`<li><a href="${pagePaths.twoFactor}">Two-factor authentication</a></li>`,
      ]
    : [
        html`<li><a href="${pagePaths.login}">Log in</a></li>`,
        html`<li><a href="${pagePaths.register}">Register</a></li>`,
        html`<li><a href="${pagePaths.magicLink}">Email me a login link</a></li>`,
      ];
  if (devInbox) links.push(html`<li><a href="/dev/inbox">Dev inbox</a></li>`);
  return html`<nav aria-label="Main"><ul>${links}</ul></nav>`;
}

/** The ALTCHA widget's style and script, on the pages whose form it guards. */
const ALTCHA_ASSETS = raw('<link rel="stylesheet" href="/ui/assets/altcha.css">\n<script type="module" src="/ui/assets/altcha.js"></script>\n');

export function renderPage(input: PageInput): Html {
  const errors = input.errors ?? [];
  const altcha = input.botGuarded === true && input.tenant.settings.botProtection.provider === "altcha";
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${errors.length > 0 ? "Error: " : ""}${input.title} · ${input.tenant.domain}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/assets/hosted.css">
${altcha ? ALTCHA_ASSETS : ""}<script type="module" src="/ui/assets/hosted.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to main content</a>
<div class="wrap">
<header class="site">
<p>${input.tenant.domain}</p>
${navigation(input.signedIn === true, input.devInbox === true)}
</header>
<main id="main" tabindex="-1">
<h1>${input.title}</h1>
${input.notice ? html`<p class="notice" role="status">${input.notice}</p>` : ""}
${errorSummary(errors)}
<p id="form-status" role="status"></p>
${input.body}
</main>
<footer><p>Sign-in pages served by Latch for ${input.tenant.domain}.</p></footer>
</div>
</body>
</html>
`;
}

export interface FormInput {
  /** The API operation the browser script sends this form to (operationId); the server path posts here. */
  operation: string;
  /** Omitted on the token pages: the form posts to the page's own URL, so the token is never written into the page. */
  action?: string;
  submit: string;
  content: Html;
  /** Accessible name of the form (the h2 above it, or the page's h1). */
  labelledBy?: string;
  submitClass?: string;
}

export function form(input: FormInput): Html {
  const action = input.action !== undefined ? html` action="${input.action}"` : "";
  const labelledBy = input.labelledBy ? html` aria-labelledby="${input.labelledBy}"` : "";
  return html`<form method="post"${action} data-latch-form="${input.operation}"${labelledBy}>
${input.content}
<div class="actions"><button type="submit"${input.submitClass ? html` class="${input.submitClass}"` : ""}>${input.submit}</button></div>
</form>`;
}

/**
 * For answers with no tenant to frame them (unknown site, refused request, failure). `next`: the
 * way on, where there is one (hosted-pages.md#page-audit: an unknown page under /ui/ leads to /ui/).
 */
export function renderErrorPage(title: string, message: string, requestId: string, next?: { href: string; text: string }): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="/ui/assets/hosted.css">
</head>
<body>
<div class="wrap">
<main id="main">
<h1>${title}</h1>
<p>${message}</p>
${next ? html`<p><a href="${next.href}">${next.text}</a></p>` : ""}<p class="hint">Reference: <code>${requestId}</code></p>
</main>
</div>
</body>
</html>
`;
}

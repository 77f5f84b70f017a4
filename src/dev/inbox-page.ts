/**
 * The dev inbox page: server-rendered HTML, no JavaScript. Every value that came in a webhook is
 * escaped, and a link becomes a button only when it is http(s), so a payload cannot inject markup
 * or a javascript: URL.
 */
import { escapeHtml } from "../ui/html.js";
import { pagePaths } from "../ui/paths.js";
import type { DevInboxEmail } from "./inbox.js";
import { DEV_TENANT_DOMAIN } from "./dev-mode.js";

/** Sent with the page: nothing but the inline style may load, and no page may frame it. */
export const INBOX_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Contrast (WCAG AA): body text #1b1b1b and muted #4a4a4a on white, white on #1d4ed8 and on #8a1c00.
const STYLE = `
body{font-family:system-ui,sans-serif;line-height:1.5;color:#1b1b1b;background:#f4f4f5;margin:0}
.wrap{max-width:48rem;margin:0 auto;padding:1rem}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem}
a{color:#1d4ed8}a:focus-visible{outline:3px solid #1b1b1b;outline-offset:2px}
.badge{display:inline-block;background:#8a1c00;color:#fff;font-weight:600;padding:.1rem .5rem;border-radius:4px;margin:0}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:1rem}
ol.messages{list-style:none;padding:0}
article{background:#fff;border:1px solid #a1a1aa;border-radius:6px;padding:1rem;margin:0 0 1rem}
article h3{margin:0 0 .5rem;font-size:1.15rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0 0 .75rem}
dt{font-weight:600}dd{margin:0;color:#4a4a4a;overflow-wrap:anywhere}
.button{display:inline-block;background:#1d4ed8;color:#fff;font-weight:600;padding:.6rem 1rem;border-radius:4px;text-decoration:none}
.url{color:#4a4a4a;font-size:.9rem;overflow-wrap:anywhere}
.code code{font-size:1.25rem;letter-spacing:.15em}
`;

function formatTime(iso: string): string {
  return iso.replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function isWebLink(link: string): boolean {
  return /^https?:\/\//i.test(link);
}

function renderEmail(email: DevInboxEmail, index: number): string {
  const id = `m${index}`;
  const to = email.to.name ? `${email.to.name} <${email.to.email}>` : email.to.email;
  const details = email.details.map((d) => `<dt>${escapeHtml(d.label)}</dt><dd>${escapeHtml(d.value)}</dd>`).join("");
  const link =
    email.link !== null && isWebLink(email.link)
      ? `<p><a class="button" href="${escapeHtml(email.link)}" aria-describedby="${id}-to">${escapeHtml(email.action ?? "Open link")}</a></p>
<p class="url">Or copy this link: <code>${escapeHtml(email.link)}</code></p>`
      : email.link !== null
        ? `<p class="url">Link: <code>${escapeHtml(email.link)}</code></p>`
        : "";
  const code =
    email.code !== null
      ? `<p class="code">Code: <strong><code>${escapeHtml(email.code)}</code></strong> <span class="url">(or type it on the "Check your email" page)</span></p>`
      : "";
  return `<li><article aria-labelledby="${id}-subject">
<h3 id="${id}-subject">${escapeHtml(email.subject)}</h3>
<dl><dt>To</dt><dd id="${id}-to">${escapeHtml(to)}</dd>
<dt>Site</dt><dd>${escapeHtml(email.site)}</dd>
<dt>Received</dt><dd><time datetime="${escapeHtml(email.receivedAt)}">${escapeHtml(formatTime(email.receivedAt))}</time></dd>
<dt>Event</dt><dd><code>${escapeHtml(email.eventType)}</code></dd>${details}</dl>
${link}${code}
</article></li>`;
}

/** The hosted pages a reader of the inbox goes back to: after a link, to sign in or to see the account. */
function pageLinks(base: string): string {
  const pages = [
    [pagePaths.login, "Sign in"],
    [pagePaths.register, "Register"],
    [pagePaths.account, "Your account"],
  ] as const;
  return pages.map(([path, label]) => `<li><a href="${escapeHtml(base + path)}">${label}</a></li>`).join("");
}

/** How often the inbox reloads itself when asked to (a dev convenience, not a rule of Latch). */
const REFRESH_SECONDS = 5;

export interface InboxPageOptions {
  autoRefresh: boolean;
  /**
   * Where the dev tenant's hosted pages are (http://localhost:<port>, dev-mode.ts `linkBase`): the way
   * back from the inbox. The pages find their tenant by Host, so an inbox opened as 127.0.0.1 still
   * links to localhost. Undefined: relative links.
   */
  pagesBase?: string;
}

/** The whole page; `emails` newest first. */
export function renderInboxPage(emails: DevInboxEmail[], options: InboxPageOptions): string {
  const list =
    emails.length === 0
      ? `<p>No messages yet. Register a member of the <code>${DEV_TENANT_DOMAIN}</code> tenant and the verification email appears here.</p>`
      : `<ol class="messages">\n${emails.map(renderEmail).join("\n")}\n</ol>`;
  const refresh = options.autoRefresh
    ? `<li><a href="/dev/inbox">Stop refreshing every ${REFRESH_SECONDS} seconds</a></li>`
    : `<li><a href="/dev/inbox">Refresh</a></li><li><a href="/dev/inbox?refresh=on">Refresh every ${REFRESH_SECONDS} seconds</a></li>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${options.autoRefresh ? `<meta http-equiv="refresh" content="${REFRESH_SECONDS}">\n` : ""}<title>Dev inbox (${emails.length}) · Latch</title>
<style>${STYLE}</style>
</head>
<body>
<a class="skip" href="#messages">Skip to messages</a>
<div class="wrap">
<header>
<p class="badge">Development only</p>
<h1>Latch dev inbox</h1>
<p>This is a <strong>development inbox</strong>, not a mailbox. <strong>Latch never sends email itself</strong>: it calls each tenant's webhooks with what the email needs, and the tenant sends the email. In dev mode the webhooks of the <code>${DEV_TENANT_DOMAIN}</code> tenant come here, their signatures are checked, and each is shown as the email the tenant would send. They are kept in memory only (the last 200) and are gone after a restart.</p>
<nav aria-label="Inbox"><ul>${refresh}<li><a href="/dev/inbox.json">The same list as JSON</a></li></ul></nav>
<nav aria-label="Hosted pages"><p>Back to the <code>${DEV_TENANT_DOMAIN}</code> tenant's pages:</p><ul>${pageLinks(options.pagesBase ?? "")}</ul></nav>
</header>
<main id="messages" tabindex="-1">
<h2>Messages (${emails.length}, newest first)</h2>
${list}
</main>
<footer><p>Dev mode (<code>DEV_MODE=true</code>, <code>npm run dev</code>) is for local development only. Never run it in production.</p></footer>
</div>
</body>
</html>
`;
}

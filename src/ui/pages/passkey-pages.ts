/**
 * contract.md#d26 in the hosted pages: the member's passkeys (list, rename, remove: plain form posts) and
 * adding one, which needs the browser's WebAuthn, so it is a form the page script sends through the
 * API (browser/passkeys.ts). Without JavaScript or passkey support the add form stays hidden and a
 * note says why. The login page's "Sign in with a passkey" is in login-pages.ts.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AuthError } from "../../errors.js";
import { deletePasskey, listPasskeys, renamePasskey, type PasskeyView } from "../../flows/passkeys/manage.js";
import { getMe, type MeView } from "../../flows/account/self-service.js";
import type { ActiveSession } from "../../flows/kernel/sessions.js";
import { PublicIdField } from "../../http/schemas.js";
import { contextOf } from "../../http/tenant.js";
import { PASSKEY_NAME_MAX_LENGTH } from "../../rules.js";
import { html, type Html } from "../html.js";
import { field, form, hidden, sendPage, type FormError } from "../layout.js";
import { FormInvalid, formValues, maxLengthOf, readFields, type FieldRule } from "../forms.js";
import { pagePaths, withNotice } from "../paths.js";
import { noticeOf, page, withSession, type PageDeps } from "./common.js";
import { reauthFields, time } from "./self-service-pages.js";

const hide = { schema: { hide: true } };
const NAME_RULE: FieldRule = { name: "name", what: "a name for the passkey", max: PASSKEY_NAME_MAX_LENGTH };
const TITLE = "Passkeys";

/** Shown only where the page script finds WebAuthn (it removes `hidden`); the note says what is missing otherwise. */
export function passkeyOnly(content: Html, missing?: string): Html {
  return html`<div class="passkey-only" hidden>${content}</div>
${missing ? html`<p class="hint passkey-missing">${missing}</p>` : ""}`;
}

/**
 * hosted-pages.md#passkey-rename: the rename form of each passkey sits behind its own "Rename"
 * disclosure (<details>, so it opens without JavaScript too), open only when its name was refused.
 */
function renameDisclosure(p: PasskeyView, i: number, errors: FormError[]): Html {
  const own = errors.filter((e) => e.field === `name-${i}`);
  return html`<details class="rename"${own.length > 0 ? html` open` : ""}>
<summary id="rename-${i}" aria-label="Rename ${p.name}">Rename</summary>
${form({
  operation: "renamePasskey",
  action: pagePaths.accountPasskeyRename,
  // Named by the summary ("Rename <name>"): the remove form is named by the passkey, and two forms of one name are one landmark twice.
  labelledBy: `rename-${i}`,
  submit: "Save the new name",
  content: html`${hidden("id", p.id)}${field({ name: `name-${i}`, label: `New name for ${p.name}`, autocomplete: "off", errors: own })}`,
})}
</details>`;
}

function passkeyList(passkeys: PasskeyView[], errors: FormError[]): Html {
  if (passkeys.length === 0) return html`<p>You have no passkeys yet.</p>`;
  return html`<ul class="sessions">${passkeys.map(
    (p, i) => html`<li>
<p><strong id="passkey-${i}">${p.name}</strong>${p.backedUp ? html` <span class="badge">Synced</span>` : ""}</p>
<p class="hint">Added ${time(p.createdAt)}; ${p.lastUsedAt ? html`last used ${time(p.lastUsedAt)}` : "not used yet"}.</p>
${renameDisclosure(p, i, errors)}
${form({
  operation: "deletePasskey",
  action: pagePaths.accountPasskeyRemove,
  labelledBy: `passkey-${i}`,
  submit: "Remove",
  submitClass: "danger",
  content: hidden("id", p.id),
})}
</li>`,
  )}</ul>`;
}

function passkeysBody(me: MeView, passkeys: PasskeyView[], errors: FormError[]): Html {
  const add = form({
    operation: "addPasskey",
    action: pagePaths.accountPasskeys,
    labelledBy: "add-title",
    submit: "Add a passkey",
    content: html`${field({
      name: "name",
      label: "Name (optional)",
      autocomplete: "off",
      required: false,
      hint: "So you can tell your passkeys apart, such as Work laptop.",
      errors,
    })}
${reauthFields(me, errors)}`,
  });
  return html`<p>A passkey signs you in with your fingerprint, face or device PIN instead of a password. \
It works only on this site, so a fake site can't trick you into using it.</p>
${passkeyList(passkeys, errors)}
<h2 id="add-title">Add a passkey</h2>
${passkeyOnly(add, "Adding a passkey needs JavaScript and a browser or device that supports passkeys.")}
<p><a href="${pagePaths.account}">Back to your account</a></p>`;
}

export async function passkeyPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const render = async (request: FastifyRequest, session: ActiveSession, errors: FormError[], notice?: string) => {
    const [me, passkeys] = await Promise.all([getMe(deps, request.tenant, session), listPasskeys(deps, request.tenant, session)]);
    return page(deps, request, { title: TITLE, body: passkeysBody(me, passkeys, errors), errors, notice, signedIn: true });
  };

  app.get(pagePaths.accountPasskeys, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => sendPage(reply, 200, await render(request, session, [], noticeOf(request)))),
  );

  // The add form is sent by the page script; a post without it (no JavaScript) says what is needed.
  app.post(pagePaths.accountPasskeys, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) =>
      sendPage(reply, 400, await render(request, session, [{ message: "Adding a passkey needs JavaScript and a browser that supports passkeys." }])),
    ),
  );

  app.post(pagePaths.accountPasskeyRename, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      const id = (values.id ?? "").slice(0, maxLengthOf(PublicIdField));
      // The list's own name field of the renamed passkey (name-<i>): whichever one was filled in.
      const fieldName = Object.keys(values).find((k) => /^name-\d{1,2}$/.test(k) && values[k]) ?? "name-0";
      const renderWith = async (errors: FormError[]) => render(request, session, errors);
      try {
        const { name } = readFields({ name: values[fieldName] ?? "" }, [NAME_RULE]);
        await renamePasskey(deps, request.tenant, session, id, name!);
      } catch (error) {
        if (!(error instanceof AuthError) && !(error instanceof FormInvalid)) throw error;
        const message =
          error instanceof AuthError && error.code === "not_found"
            ? "That passkey has already been removed."
            : `Give the passkey a name of 1 to ${PASSKEY_NAME_MAX_LENGTH} characters, without control or invisible formatting characters.`;
        return sendPage(reply, error instanceof AuthError ? error.status : 400, await renderWith([{ field: fieldName, message }]));
      }
      return reply.redirect(withNotice(pagePaths.accountPasskeys, "passkey-renamed"), 303);
    }),
  );

  app.post(pagePaths.accountPasskeyRemove, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const id = (formValues(request).id ?? "").slice(0, maxLengthOf(PublicIdField));
      try {
        await deletePasskey(deps, request.tenant, session, id, contextOf(request));
      } catch (error) {
        // Removed already (another tab): the list, as it is now, says so.
        if (!(error instanceof AuthError) || error.code !== "not_found") throw error;
        return sendPage(reply, 404, await render(request, session, [{ message: "That passkey has already been removed." }]));
      }
      return reply.redirect(withNotice(pagePaths.accountPasskeys, "passkey-removed"), 303);
    }),
  );
}

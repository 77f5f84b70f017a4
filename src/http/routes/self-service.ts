/** contract.md#d24: the member's own profile, email, sessions and account. Session calls follow contract.md#d2's CSRF rule. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { confirmEmailChange, requestEmailChange } from "../../flows/account/email-change.js";
import { secureAccount } from "../../flows/account/secure-account.js";
import { changeName, deleteAccount, getMe, listSessions, revokeOtherSessions, revokeSession } from "../../flows/account/self-service.js";
import { findActiveSession } from "../../flows/kernel/sessions.js";
import { BODY_ERRORS, ClearSessionCookieHeader, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import {
  described,
  EmailField,
  memberIdentityFields,
  MessageBody,
  NameField,
  NoBodyNeeded,
  PasswordField,
  PublicIdField,
  RecordIdField,
  SessionFields,
  Timestamp,
  TokenField,
  TwoFactorCodeField,
} from "../schemas.js";
import { clearSessionCookie, requireSession } from "../session-cookie.js";
import { contextOf, SESSION_COOKIE } from "../tenant.js";
import { describeDuration, describeWindow, FRESH_SESSION_MS, NAME_MAX_LENGTH, rateRules, TOKEN_LIFETIMES_MS } from "../../rules.js";

export const MeBody = described(
  Type.Object({
    success: Type.Literal(true),
    ...memberIdentityFields,
    hasPassword: Type.Boolean({
      description: `False for a magic-link-only member: re-authentication then needs a session under ${describeDuration(FRESH_SESSION_MS)} old.`,
    }),
    createdAt: Timestamp,
  }),
  "The signed-in member.",
);
export const UpdateMeBody = Type.Object({ name: NameField });
/** contract.md#d24 re-authentication fields, shared by every route that re-authenticates. */
export const Reauthentication = {
  password: Type.Optional(described(PasswordField, "Required when the member has a password.")),
  twoFACode: Type.Optional(described(TwoFactorCodeField, "A TOTP or recovery code; required when 2FA is on.")),
};
export const ChangeEmailBody = Type.Object({ newEmail: EmailField, ...Reauthentication });
export const DeleteAccountBody = Type.Object(Reauthentication);
export const LinkBody = Type.Object({ recordId: RecordIdField, token: TokenField });
export const SessionListBody = described(
  Type.Object({
    success: Type.Literal(true),
    sessions: Type.Array(
      Type.Object({
        id: Type.String({ description: "Public id: names the session in `DELETE /auth/sessions/{id}`; it is not the cookie and opens nothing." }),
        ...SessionFields,
        current: Type.Boolean({ description: "The session of this request." }),
      }),
    ),
  }),
  "The member's live sessions, newest first.",
);
export const SessionParams = Type.Object({ id: PublicIdField });
const SESSION_ERRORS = [...TENANT_ERRORS, "unauthorized"] as const;
export const REAUTH_ERRORS = ["invalid_credentials", "invalid_2fa_code", "password_change_required", "rate_limited"] as const;

export const selfServiceRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.get(
    "/auth/me",
    {
      schema: {
        summary: "Read the signed-in member's profile",
        description: "The profile of the member the session belongs to.",
        tags: ["account"],
        operationId: "getMe",
        security: security.session,
        response: { 200: MeBody, ...errorResponses(...SESSION_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, ...(await getMe(deps, request.tenant, await requireSession(deps, request))) }),
  );

  app.patch(
    "/auth/me",
    {
      schema: {
        summary: "Change the signed-in member's name",
        description: `1 to ${NAME_MAX_LENGTH} characters, no control or invisible formatting characters (Unicode Cc, Cf: bidi controls, zero-width characters). Sends \`member.updated\` (\`changes: ["name"]\`) to the tenant's \`eventsWebhook\`.`,
        tags: ["account"],
        operationId: "updateMe",
        security: security.session,
        body: UpdateMeBody,
        response: { 200: MeBody, ...errorResponses(...SESSION_ERRORS, ...BODY_ERRORS) },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, ...(await changeName(deps, request.tenant, session, request.body.name, contextOf(request))) };
    },
  );

  app.post(
    "/auth/change-email",
    {
      schema: {
        summary: "Ask to change the email address",
        description: `Re-authenticates: \`password\` when the member has one (same lockout as login), else a session under ${describeDuration(FRESH_SESSION_MS)} old; and \`twoFACode\` when 2FA is on. In \`Password Change Pending\` a password is refused (403 \`password_change_required\`): it is the one flagged. Then sends \`email_change\` (\`verificationLink\` to \`/email-change/{recordId}/{token}\`, ${describeDuration(TOKEN_LIFETIMES_MS.email_change)}) to the new address through \`emailVerificationWebhook\`, and a \`security_alert\` \`email_change_requested\` to the current one. The same answer whether or not the new address is taken (nothing is sent to a taken one). ${rateRules.changeEmailPerMember.limit} requests per member per ${describeWindow(rateRules.changeEmailPerMember.windowMs)}.`,
        tags: ["account"],
        operationId: "changeEmail",
        security: security.session,
        body: ChangeEmailBody,
        response: { 200: described(MessageBody, "Generic success."), ...errorResponses(...SESSION_ERRORS, ...BODY_ERRORS, ...REAUTH_ERRORS) },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, message: await requestEmailChange(deps, request.tenant, session, request.body, contextOf(request)) };
    },
  );

  app.post(
    "/auth/confirm-email-change",
    {
      schema: {
        summary: "Confirm a new email address with the emailed link",
        description:
          "`recordId` and `token` are the last two segments of the `verificationLink`. No session needed (the link may be opened on another device). Replaces the email, ends every other session, voids every link sent to the old address, sends `security_alert` `email_changed` to the old address and `member.updated` to `eventsWebhook`. 409 `conflict` when the address was taken meanwhile (the link stays valid).",
        tags: ["account"],
        operationId: "confirmEmailChange",
        body: LinkBody,
        response: { 200: described(MessageBody, "The email is changed."), ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, "invalid_token", "conflict") },
      },
    },
    async (request) => {
      const current = await findActiveSession(deps, request.tenant, request.cookies[SESSION_COOKIE]);
      const keep = current && current.data.recordId === request.body.recordId ? current.idHash : undefined;
      return { success: true as const, message: await confirmEmailChange(deps, request.tenant, request.body, contextOf(request), keep) };
    },
  );

  app.post(
    "/auth/secure-account",
    {
      schema: {
        summary: '"This wasn\'t me": lock the account down from a security alert',
        description: `\`recordId\` and \`token\` are the last two segments of an alert's \`secureAccountLink\` (${describeDuration(TOKEN_LIFETIMES_MS.secure_account)}, one use; each alert has its own, used up alone: a password or email change, or another alert's link, leaves the others valid). Ends every session, voids every sign-in, reset and email-change link, removes every passkey, sets \`Password Change Pending\` (a locked account stays locked) and turns off a second factor turned on after the alert was sent. After an \`email_changed\` or \`email_change_requested\` alert whose address the account no longer has, it gives that address back for good (the alert links issued after this one, sent to the replaced addresses, are void), unless a verified account holds it now (the message then says so); a pending registration holding it is erased.`,
        tags: ["account"],
        operationId: "secureAccount",
        body: LinkBody,
        response: {
          200: described(MessageBody, "The account is secured; `Set-Cookie` clears `session_id`.", ClearSessionCookieHeader),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, "invalid_token"),
        },
      },
    },
    async (request, reply) => {
      const { message } = await secureAccount(deps, request.tenant, request.body, contextOf(request));
      clearSessionCookie(reply);
      return { success: true as const, message };
    },
  );

  app.get(
    "/auth/sessions",
    {
      schema: {
        summary: "List the member's sessions",
        description: "Where and when each live session was opened and last used.",
        tags: ["account"],
        operationId: "listSessions",
        security: security.session,
        response: { 200: SessionListBody, ...errorResponses(...SESSION_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, sessions: await listSessions(deps, request.tenant, await requireSession(deps, request)) }),
  );

  app.delete(
    "/auth/sessions/:id",
    {
      schema: {
        summary: "End one of the member's sessions",
        description:
          "`id` from `GET /auth/sessions`. Ending the current one also clears the cookie. 404 `not_found` for an id that is not one of the member's live sessions.",
        tags: ["account"],
        operationId: "revokeSession",
        security: security.session,
        params: SessionParams,
        response: {
          200: described(MessageBody, "The session has ended; when it was the current one, `Set-Cookie` clears `session_id`.", ClearSessionCookieHeader),
          ...errorResponses(...SESSION_ERRORS, "validation_failed", "not_found"),
        },
      },
    },
    async (request, reply) => {
      const session = await requireSession(deps, request);
      const { current } = await revokeSession(deps, request.tenant, session, request.params.id, contextOf(request));
      if (current) clearSessionCookie(reply);
      return { success: true as const, message: "The session has ended." };
    },
  );

  app.post(
    "/auth/sessions/revoke-others",
    {
      schema: {
        summary: "End every other session of the member",
        description: "OWASP ASVS 3.3.4. This session stays.",
        tags: ["account"],
        operationId: "revokeOtherSessions",
        security: security.session,
        body: NoBodyNeeded,
        response: { 200: described(MessageBody, "Every other session has ended."), ...errorResponses(...SESSION_ERRORS, ...BODY_ERRORS) },
      },
    },
    async (request) => {
      await revokeOtherSessions(deps, request.tenant, await requireSession(deps, request), contextOf(request));
      return { success: true as const, message: "Every other session has ended." };
    },
  );

  app.post(
    "/auth/delete-account",
    {
      schema: {
        summary: "Delete the signed-in member's account",
        description:
          "The same re-authentication as `/auth/change-email`, then the erasure an admin's delete does (every row keyed to the member, in one transaction); `member.deleted` goes to `eventsWebhook`. Clears the cookie.",
        tags: ["account"],
        operationId: "deleteAccount",
        security: security.session,
        body: DeleteAccountBody,
        response: {
          200: described(MessageBody, "The account is deleted; `Set-Cookie` clears `session_id`.", ClearSessionCookieHeader),
          ...errorResponses(...SESSION_ERRORS, ...BODY_ERRORS, ...REAUTH_ERRORS),
        },
      },
    },
    async (request, reply) => {
      await deleteAccount(deps, request.tenant, await requireSession(deps, request), request.body, contextOf(request));
      clearSessionCookie(reply);
      return { success: true as const, message: "Your account has been deleted." };
    },
  );
};

/** contract.md#d26: passkeys. Registration and management need the session (contract.md#d2's CSRF rule); login needs the bot check. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { finishPasskeyLogin, startPasskeyLogin } from "../../flows/passkeys/login.js";
import { deletePasskey, listPasskeys, renamePasskey } from "../../flows/passkeys/manage.js";
import { finishPasskeyRegistration, startPasskeyRegistration } from "../../flows/passkeys/registration.js";
import { BODY_ERRORS, BOT_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import {
  describeDuration,
  describeWindow,
  FRESH_SESSION_MS,
  MAX_CREDENTIAL_ID_BYTES,
  MAX_PASSKEYS_PER_MEMBER,
  PASSKEY_CHALLENGE_LIFETIME_MS,
  PASSKEY_NAME_MAX_LENGTH,
  rateRules,
} from "../../rules.js";
import { BotField, described, MessageBody, PasswordField, PublicIdField, Timestamp, TwoFactorCodeField } from "../schemas.js";
import { loginAnswer } from "../login-answers.js";
import { requireSession } from "../session-cookie.js";
import { contextOf } from "../tenant.js";
import { LoginAnswer } from "./login.js";

const Base64Url = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: "^[A-Za-z0-9_-]+$" });
const credentialFields = {
  id: Base64Url(1400),
  rawId: Base64Url(1400),
  type: Type.Literal("public-key"),
  authenticatorAttachment: Type.Optional(Type.Union([Type.Literal("platform"), Type.Literal("cross-platform")])),
  clientExtensionResults: Type.Unsafe<object>({ type: "object", additionalProperties: true }),
};

/** What `navigator.credentials.create()` gives, as JSON (`@simplewebauthn/browser` `startRegistration`). */
export const RegistrationResponse = Type.Object(
  {
    ...credentialFields,
    response: Type.Object({
      clientDataJSON: Base64Url(4096),
      attestationObject: Base64Url(16384),
      authenticatorData: Type.Optional(Base64Url(16384)),
      transports: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 8 })),
      publicKeyAlgorithm: Type.Optional(Type.Integer()),
      publicKey: Type.Optional(Base64Url(4096)),
    }),
  },
  { description: "The `RegistrationResponseJSON` of WebAuthn Level 3 (`PublicKeyCredential.toJSON()`)." },
);

/** What `navigator.credentials.get()` gives, as JSON (`@simplewebauthn/browser` `startAuthentication`). */
export const AuthenticationResponse = Type.Object(
  {
    ...credentialFields,
    response: Type.Object({
      clientDataJSON: Base64Url(4096),
      authenticatorData: Base64Url(16384),
      signature: Base64Url(2048),
      userHandle: Type.Optional(Base64Url(256)),
    }),
  },
  { description: "The `AuthenticationResponseJSON` of WebAuthn Level 3 (`PublicKeyCredential.toJSON()`)." },
);

/** WebAuthn's options JSON, passed to the browser as it is (its shape is the WebAuthn spec's, not ours). */
const Options = (description: string) => Type.Unsafe<Record<string, unknown>>({ type: "object", additionalProperties: true, description });
export const RegistrationOptionsBody = Type.Object({
  password: Type.Optional(described(PasswordField, "Required when the member has a password.")),
  twoFACode: Type.Optional(described(TwoFactorCodeField, "A TOTP or recovery code; required when 2FA is on.")),
});
export const RegistrationVerifyBody = Type.Object({
  response: RegistrationResponse,
  name: Type.Optional(
    Type.String({ maxLength: PASSKEY_NAME_MAX_LENGTH, description: 'The member\'s name for it ("Work laptop"); a dated default otherwise.' }),
  ),
});
export const PasskeyFields = Type.Object({
  id: Type.String({ description: "Ours, for `PATCH`/`DELETE /auth/passkeys/{id}`; not the credential id." }),
  name: Type.String(),
  createdAt: Timestamp,
  lastUsedAt: Type.Union([Timestamp, Type.Null()]),
  backedUp: Type.Boolean({ description: "Synced to the member's other devices." }),
});
export const PasskeyBody = described(Type.Object({ success: Type.Literal(true), passkey: PasskeyFields }), "The passkey.");
export const PasskeyListBody = described(
  Type.Object({ success: Type.Literal(true), passkeys: Type.Array(PasskeyFields) }),
  "The member's passkeys, oldest first.",
);
export const PasskeyParams = Type.Object({ id: PublicIdField });
export const RenamePasskeyBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: PASSKEY_NAME_MAX_LENGTH }) });
export const LoginOptionsBody = Type.Object({ "bot-challenge-response": BotField });
export const LoginVerifyBody = Type.Object({ response: AuthenticationResponse });

const SESSION_ERRORS = [...TENANT_ERRORS, "unauthorized"] as const;

export const passkeyRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post(
    "/auth/passkeys/register/options",
    {
      schema: {
        summary: "Start adding a passkey",
        description:
          "The `PublicKeyCredentialCreationOptionsJSON` to pass to `navigator.credentials.create()` (or `startRegistration` of `@simplewebauthn/browser`): RP ID the tenant's hostname, a discoverable credential with user verification. " +
          `Adding a way in re-authenticates as an email change does: \`password\` when the member has one (never in \`Password Change Pending\`), else a session under ${describeDuration(FRESH_SESSION_MS)} old; and \`twoFACode\` when 2FA is on. The challenge is good for one answer within ${describeDuration(PASSKEY_CHALLENGE_LIFETIME_MS)}; a new call voids the previous one. At most ${MAX_PASSKEYS_PER_MEMBER} passkeys per member (409 \`conflict\`).`,
        tags: ["passkeys"],
        operationId: "startPasskeyRegistration",
        security: security.session,
        body: RegistrationOptionsBody,
        response: {
          200: described(Options("PublicKeyCredentialCreationOptionsJSON"), "Options for the browser."),
          ...errorResponses(
            ...SESSION_ERRORS,
            ...BODY_ERRORS,
            "invalid_credentials",
            "invalid_2fa_code",
            "password_change_required",
            "conflict",
            "rate_limited",
          ),
        },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      const options: Record<string, unknown> = { ...(await startPasskeyRegistration(deps, request.tenant, session, request.body, contextOf(request))) };
      return options;
    },
  );

  app.post(
    "/auth/passkeys/register/verify",
    {
      schema: {
        summary: "Finish adding a passkey",
        description:
          `The browser's answer to the options. The challenge is used up first, so an answer counts once whether it passes or not (400 \`invalid_token\`: expired or used). An answer that doesn't verify (origin, RP ID, signature, no user verification, made in a frame of another origin's page (clientData \`crossOrigin: true\` or a \`topOrigin\`), a credential id over ${MAX_CREDENTIAL_ID_BYTES} bytes or unlike \`response.id\`) is 400 \`validation_failed\`, as is a \`name\` with control or invisible formatting characters (Unicode Cc, Cf); a credential already registered here is 409 \`conflict\`. Unknown \`transports\` are dropped. ` +
          "Sends the member a `security_alert` `passkey_added` (with `passkeyName`).",
        tags: ["passkeys"],
        operationId: "finishPasskeyRegistration",
        security: security.session,
        body: RegistrationVerifyBody,
        response: { 200: PasskeyBody, ...errorResponses(...SESSION_ERRORS, ...BODY_ERRORS, "invalid_token", "conflict") },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      const passkey = await finishPasskeyRegistration(
        deps,
        request.tenant,
        session,
        { response: request.body.response, name: request.body.name },
        contextOf(request),
      );
      return { success: true as const, passkey };
    },
  );

  app.get(
    "/auth/passkeys",
    {
      schema: {
        summary: "List the member's passkeys",
        description: "Each passkey's name, when it was added and last used, and whether it is synced to other devices.",
        tags: ["passkeys"],
        operationId: "listPasskeys",
        security: security.session,
        response: { 200: PasskeyListBody, ...errorResponses(...SESSION_ERRORS) },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, passkeys: await listPasskeys(deps, request.tenant, session) };
    },
  );

  app.patch(
    "/auth/passkeys/:id",
    {
      schema: {
        summary: "Rename a passkey",
        description: `1 to ${PASSKEY_NAME_MAX_LENGTH} characters. 404 \`not_found\` for an id that is not one of the member's passkeys.`,
        tags: ["passkeys"],
        operationId: "renamePasskey",
        security: security.session,
        params: PasskeyParams,
        body: RenamePasskeyBody,
        response: { 200: PasskeyBody, ...errorResponses(...SESSION_ERRORS, ...BODY_ERRORS, "not_found") },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, passkey: await renamePasskey(deps, request.tenant, session, request.params.id, request.body.name) };
    },
  );

  app.delete(
    "/auth/passkeys/:id",
    {
      schema: {
        summary: "Remove a passkey",
        description: "Sends the member a `security_alert` `passkey_removed`. 404 `not_found` for an id that is not one of the member's passkeys.",
        tags: ["passkeys"],
        operationId: "deletePasskey",
        security: security.session,
        params: PasskeyParams,
        response: { 200: described(MessageBody, "Removed."), ...errorResponses(...SESSION_ERRORS, ...BODY_ERRORS, "not_found") },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      await deletePasskey(deps, request.tenant, session, request.params.id, contextOf(request));
      return { success: true as const, message: "The passkey was removed." };
    },
  );

  app.post(
    "/auth/passkeys/login/options",
    {
      schema: {
        summary: "Start a passkey login",
        description:
          "The `PublicKeyCredentialRequestOptionsJSON` for `navigator.credentials.get()` (or `startAuthentication`, with `useBrowserAutofill` for conditional UI): no `allowCredentials` (the passkey is discoverable and names its member), user verification required. " +
          `Behind the bot check; ${rateRules.passkeyLoginPerIp.limit} per IP per ${describeWindow(rateRules.passkeyLoginPerIp.windowMs)}. The challenge is good for one answer within ${describeDuration(PASSKEY_CHALLENGE_LIFETIME_MS)}.`,
        tags: ["passkeys"],
        operationId: "startPasskeyLogin",
        body: LoginOptionsBody,
        response: {
          200: described(Options("PublicKeyCredentialRequestOptionsJSON"), "Options for the browser."),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...BOT_ERRORS, "rate_limited"),
        },
      },
    },
    async (request) => {
      const options: Record<string, unknown> = {
        ...(await startPasskeyLogin(deps, request.tenant, request.body["bot-challenge-response"], contextOf(request))),
      };
      return options;
    },
  );

  app.post(
    "/auth/passkeys/login/verify",
    {
      schema: {
        summary: "Log in with a passkey",
        description:
          "The browser's answer to the login options: the session cookie and the body of `/auth/login`. No second factor is asked (a passkey is possession plus user verification) and the session satisfies `require2FA`. " +
          "400 `invalid_token`: the challenge expired or was used (an answer counts once). 401 `invalid_credentials`: unknown here, a bad signature, another origin or RP ID, made in a frame of another origin's page (clientData `crossOrigin: true` or a `topOrigin`), no user verification, or a sign counter that went back (audited as `passkey_counter_regressed`). 403 `account_locked` or `email_not_verified` as for a magic link.",
        tags: ["passkeys"],
        operationId: "finishPasskeyLogin",
        body: LoginVerifyBody,
        response: {
          200: LoginAnswer,
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, "invalid_token", "invalid_credentials", "account_locked", "email_not_verified"),
        },
      },
    },
    async (request, reply) => {
      const result = await finishPasskeyLogin(deps, request.tenant, request.body.response, contextOf(request));
      return loginAnswer(reply, result);
    },
  );
};

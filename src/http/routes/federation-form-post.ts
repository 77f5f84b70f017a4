/**
 * The provider's callback by `response_mode=form_post` (decisions.md#sign-in-with-apple): Apple answers
 * every authorization that asks a scope with a cross-site POST to the redirect URI. The `latch_fed`
 * cookie is SameSite=Lax (decisions.md#federated-sign-in), so the browser does not send it on that
 * POST; this route answers 303 to the GET callback with the provider's parameters, a top-level
 * navigation on which the browser does send it, and the GET callback checks the flow as for any
 * provider. Nothing is checked or spent here: the POST carries no cookie and proves nothing.
 *
 * Its own encapsulated plugin: the form parser is this route's only, and it takes no JSON, so the
 * rest of the API keeps answering 415 to anything but `application/json` (contract.md#d4).
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { MAX_URL_LENGTH } from "../../rules.js";
import { pagePaths } from "../../ui/paths.js";
import { BODY_ERRORS, errorResponses, TENANT_ERRORS } from "../openapi.js";
import { ConnectionParam, RedirectAnswer } from "./federation.js";

/** What the GET callback reads (RFC 6749 4.1.2 and 4.1.2.1, RFC 9207 `iss`), in the order it gets them. */
const FORWARDED = ["code", "state", "iss", "error", "error_description"] as const;
/** The GET's URL holds them all: a field is never longer than the longest URL Latch takes. */
const PARAMETER = Type.Optional(Type.String({ maxLength: MAX_URL_LENGTH }));

export const FormPostBody = Type.Object(
  {
    code: PARAMETER,
    state: PARAMETER,
    iss: PARAMETER,
    error: PARAMETER,
    error_description: PARAMETER,
    id_token: Type.Optional(
      Type.String({ maxLength: 8192, description: "Apple's ID token: dropped, the code exchange fetches it again and checks it (signature, `nonce`)." }),
    ),
    user: Type.Optional(Type.String({ maxLength: 4096, description: "Apple's name and email on the first authorization: unsigned, dropped." })),
  },
  {
    additionalProperties: false,
    description: "The provider's authorization response (OAuth 2.0 Form Post Response Mode): each name once.",
  },
);

const errorPage = `${pagePaths.federatedError}?code=federation_failed&reason=invalid_response`;

/** A repeated name becomes a list, which the schema refuses: the provider sends each once. */
function parseProviderForm(_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void {
  const fields: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of new URLSearchParams(body.toString())) {
    const seen = fields[name];
    fields[name] = seen === undefined ? value : [...([] as string[]).concat(seen), value];
  }
  done(null, fields);
}

export const federationFormPostRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app) => {
  // A provider's form post is always form-encoded; JSON here is no provider's, so 415 as elsewhere.
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, parseProviderForm);

  app.post(
    "/auth/federated/:connection/callback",
    {
      // A browser lands here: a field that is not the provider's, repeated or too long sends it to the
      // error page rather than to a JSON body.
      attachValidation: true,
      schema: {
        summary: "The provider's callback by form post",
        description:
          "For a provider that answers with `response_mode=form_post` (Apple, whose `apple` connections ask for it): the provider's cross-site POST, which carries no cookie. Answers 303 to `GET /auth/federated/{connection}/callback` with `code`, `state`, `iss`, `error` and `error_description` (`id_token` and `user` dropped) and `Referrer-Policy: no-referrer`; that navigation brings the `latch_fed` cookie and does every check. Neither `code` nor `error`, another field, a repeated one, one too long, or a bad connection id: 303 to `/ui/federated-error?code=federation_failed&reason=invalid_response`. Only `application/x-www-form-urlencoded`: JSON answers 415.",
        tags: ["federation"],
        operationId: "federatedFormPostCallback",
        consumes: ["application/x-www-form-urlencoded"],
        params: Type.Object({ connection: ConnectionParam }),
        body: FormPostBody,
        response: {
          303: RedirectAnswer("To the GET callback with the provider's parameters, or to `/ui/federated-error`."),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS),
        },
      },
    },
    async (request, reply) => {
      // The code and state go into the next URL: that page must not pass this one on as a Referer.
      void reply.header("referrer-policy", "no-referrer");
      // Neither a code nor an error: no provider's answer (an empty POST) has anything to pass on.
      if (request.validationError || (request.body.code === undefined && request.body.error === undefined)) {
        request.log.info({ reason: "invalid_form_post" }, "federated form post refused");
        return reply.redirect(errorPage, 303);
      }
      const query = new URLSearchParams();
      for (const name of FORWARDED) {
        const value = request.body[name];
        if (value !== undefined) query.append(name, value);
      }
      const target = `/auth/federated/${request.params.connection}/callback?${query.toString()}`;
      // The GET would answer 414 to a longer URL; a provider's real answer is far shorter.
      if (target.length > MAX_URL_LENGTH) {
        request.log.info({ reason: "form_post_too_long" }, "federated form post refused");
        return reply.redirect(errorPage, 303);
      }
      return reply.redirect(target, 303);
    },
  );
};

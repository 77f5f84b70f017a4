/**
 * The pages behind the emailed links (spec 4.6). Each is served twice: at /<page>/<recordId>/<token>,
 * where the emailed link points, and under /ui/. GET renders a button and changes nothing (mail
 * scanners and link previews open links); only the POST, to the page's own URL, uses the token.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { RecordIdField, TokenField } from "../../http/schemas.js";
import { maxLengthOf } from "../forms.js";
import { UI, type TOKEN_PAGES } from "../paths.js";

export interface LinkParams {
  recordId: string;
  token: string;
}

/** The link's two segments when they have the shape Latch issues; undefined for anything else. */
export function readLinkParams(request: FastifyRequest): LinkParams | undefined {
  const { recordId, token } = request.params as { recordId?: string; token?: string };
  if (typeof recordId !== "string" || !/^[0-9]+$/.test(recordId) || recordId.length > maxLengthOf(RecordIdField)) return undefined;
  if (typeof token !== "string" || !/^[A-Za-z0-9_-]+$/.test(token) || token.length > maxLengthOf(TokenField)) return undefined;
  return { recordId, token };
}

export interface TokenPageHandlers {
  show(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
  submit(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
}

export function tokenPageRoutes(app: FastifyInstance, name: (typeof TOKEN_PAGES)[number], handlers: TokenPageHandlers): void {
  for (const path of [`/${name}/:recordId/:token`, `${UI}/${name}/:recordId/:token`]) {
    app.get(path, { schema: { hide: true } }, handlers.show);
    app.post(path, { schema: { hide: true } }, handlers.submit);
  }
}

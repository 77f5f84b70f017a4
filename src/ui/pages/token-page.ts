/**
 * The pages behind the emailed links (contract.md#spec-4-6). Each is served twice: at /<page>/<recordId>/<token>,
 * where the emailed link points, and under /ui/. GET renders a button and changes nothing (mail
 * scanners and link previews open links); only the POST, to the page's own URL, uses the token.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AuthError } from "../../errors.js";
import { RecordIdField, TokenField } from "../../http/schemas.js";
import type { Html } from "../html.js";
import { sendPage, type FormError } from "../layout.js";
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

/** The API's own words for a dead link (invalid_token). */
const DEAD_LINK_ERRORS: FormError[] = [{ message: new AuthError("invalid_token").message }];

export interface TokenPageHandlers {
  /** The GET's page: `alive` is false (and `errors` say so) when the link lacks the shape Latch issues. */
  render(request: FastifyRequest, errors: FormError[], alive: boolean): Html | Promise<Html>;
  submit(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
  /** Whether the link is still usable (a read: the GET uses nothing), so a used or expired one shows no form. */
  isLive?(request: FastifyRequest, link: LinkParams): Promise<boolean>;
}

export function tokenPageRoutes(app: FastifyInstance, name: (typeof TOKEN_PAGES)[number], handlers: TokenPageHandlers): void {
  const show = async (request: FastifyRequest, reply: FastifyReply) => {
    const link = readLinkParams(request);
    const alive = link !== undefined && (handlers.isLive === undefined || (await handlers.isLive(request, link)));
    return sendPage(reply, alive ? 200 : 400, await handlers.render(request, alive ? [] : DEAD_LINK_ERRORS, alive));
  };
  for (const path of [`/${name}/:recordId/:token`, `${UI}/${name}/:recordId/:token`]) {
    app.get(path, { schema: { hide: true } }, show);
    app.post(path, { schema: { hide: true } }, handlers.submit);
  }
}

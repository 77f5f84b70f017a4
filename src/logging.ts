/**
 * The logger and what never reaches a log line. Flows and plugins log objects; these paths cover
 * every secret-bearing field name, and the request serializer masks tokens in URLs.
 */
import pino, { type DestinationStream, type Logger } from "pino";
import { linkPages } from "./model.js";

const secretFields = [
  "password",
  "currentPassword",
  "newPassword",
  "token",
  "twoFACode",
  "sessionId",
  "apiKey",
  "internalApiKey",
  "webhookSecret",
  "secretKey",
  "secret",
  "clientSecret",
  "clientSecretSealed",
  "recoveryCodes",
  "secureAccountLink",
  "otpauthUrl",
  "verificationLink",
  "resetLink",
  "magicLoginLink",
  '["bot-challenge-response"]',
];

/** Each secret field at the top level of a log object and one level down. */
export const logRedactPaths = [
  "req.headers.authorization",
  "req.headers.cookie",
  'res.headers["set-cookie"]',
  ...secretFields,
  ...secretFields.map((f) => (f.startsWith("[") ? `*${f}` : `*.${f}`)),
];

/** Route names whose links end in `/{recordId}/{token}` (contract.md#spec-4-6): what follows the record id is masked. */
const LINK_ROUTE_NAMES = new Set<string>(Object.values(linkPages));
/**
 * Any run of URL characters this long between delimiters is masked wherever it is (contract.md#d21: whichever
 * route matched, or none): every token we issue is 43 characters, no route name of ours passes 25.
 */
const SECRET_LIKE = /[^/?#&=;]{32,}/g;

function decodedName(segment: string): string {
  try {
    return decodeURIComponent(segment).toLowerCase();
  } catch {
    return segment.toLowerCase();
  }
}

/**
 * The URL as logs may hold it: tokens masked in the link routes however the path is spelled
 * (`//auth/…`, `/AUTH/…`, percent-encoded names, extra segments) and any token-long value anywhere.
 */
export function redactUrl(url: string): string {
  const cut = url.search(/[?#]/);
  const path = cut < 0 ? url : url.slice(0, cut);
  const rest = cut < 0 ? "" : url.slice(cut);
  let tokenAt = Number.POSITIVE_INFINITY;
  const segments = path.split("/").map((segment, i) => {
    if (i >= tokenAt && segment !== "") return "[redacted]";
    if (LINK_ROUTE_NAMES.has(decodedName(segment))) tokenAt = i + 2;
    return segment;
  });
  // decisions.md#federated-sign-in: a callback's `code` (GitHub's is 20 characters) and `state` are masked whatever their length.
  const masked = rest.replace(/([?&](?:code|state)=)[^&#]*/gi, "$1[redacted]");
  return (segments.join("/") + masked).replace(SECRET_LIKE, "[redacted]");
}

interface LoggedRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  ip?: string;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    redact: { paths: logRedactPaths, censor: "[redacted]" },
    serializers: {
      req: (req: LoggedRequest) => ({ method: req.method, url: redactUrl(req.url), host: req.headers["x-tenant-domain"] ?? req.headers.host, ip: req.ip }),
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

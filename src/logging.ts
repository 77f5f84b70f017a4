/**
 * The logger and what never reaches a log line. Flows and plugins log objects; these paths cover
 * every secret-bearing field name, and the request serializer masks tokens in URLs.
 */
import pino, { type DestinationStream, type Logger } from "pino";

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
  "recoveryCodes",
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

/**
 * Paths whose URL carries a token get it masked before the URL is logged: the magic-link API route
 * and the pages the emailed links open (spec 4.6), at their own paths and under /ui/.
 */
const TOKEN_IN_PATH = /^((?:\/auth\/verify-magic-link|(?:\/ui)?\/(?:email-verified|reset-password|verify-magic-link))\/[^/?#]+\/)[^/?#]+/;

export function redactUrl(url: string): string {
  return url.replace(TOKEN_IN_PATH, "$1[redacted]");
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

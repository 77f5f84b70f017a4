/** Schema helpers shared by the schemas of core/ (tenant settings, webhook bodies) and of http/. */
import { Type, type TSchema } from "typebox";

/**
 * A string out of a fixed list, as the document's `enum` (TypeBox's union of literals reads as anyOf
 * there), typed as the union of the list. A list typed `string[]` is refused: its type would be
 * wider than the document, and test/client-types.test.ts would pass a wide SDK type against it.
 */
export function StringEnum<T extends string>(values: string extends T ? never : readonly T[], options: { description?: string } = {}) {
  return Type.Unsafe<T>({ type: "string", enum: [...values], ...options });
}

/**
 * `schema` with the description of the answer it documents (OpenAPI `responses.<status>.description`)
 * and, optionally, response headers. Validation and serialisation ignore both keywords.
 */
export function described<T extends TSchema>(schema: T, description: string, headers?: Record<string, TSchema>): T {
  return { ...schema, description, ...(headers ? { headers } : {}) };
}

/**
 * Every time in an answer, a webhook or CLI output that is Latch's own is this: an ISO 8601 UTC string
 * with milliseconds, `Date.toISOString()` (docs/api-conventions.md#times). The few that are not are
 * fixed by the spec or another protocol, listed there; test/api-conventions.test.ts fails on any other.
 */
export const Timestamp = Type.String({ format: "date-time", description: "ISO 8601 UTC time (`2026-01-01T12:00:00.000Z`)." });

/** The one way a time becomes a Timestamp (a Unix time in milliseconds in, as the store and the clock hold it). */
export function toTimestamp(unixMs: number): string {
  return new Date(unixMs).toISOString();
}

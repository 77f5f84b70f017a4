/**
 * Reading the no-JavaScript form posts and turning a flow's AuthError back into the form's errors.
 * The body arrives as application/x-www-form-urlencoded (parsed in routes.ts) or JSON.
 */
import type { FastifyRequest } from "fastify";
import { AuthError } from "../errors.js";
import type { FormError } from "./layout.js";
import { fieldForError, messageForError } from "./form-errors.js";

export type FormValues = Record<string, string>;

/** Only string values: a repeated or odd field is read as absent, never as an array or object. */
export function formValues(request: FastifyRequest): FormValues {
  const body = request.body;
  if (typeof body !== "object" || body === null) return {};
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
}

/** A form that is wrong before any flow runs: a required field missing or too long. */
export class FormInvalid extends Error {
  constructor(readonly errors: FormError[]) {
    super("form invalid");
  }
}

export interface FieldRule {
  name: string;
  /** Said in "Enter <what>". */
  what: string;
  max: number;
  /** Passwords keep their spaces; everything else is trimmed. */
  keepSpaces?: boolean;
  optional?: boolean;
}

/** The values of `rules`, or FormInvalid naming each missing or over-long field. */
export function readFields(values: FormValues, rules: FieldRule[]): FormValues {
  const errors: FormError[] = [];
  const out: FormValues = {};
  for (const rule of rules) {
    const rawValue = values[rule.name] ?? "";
    const value = rule.keepSpaces ? rawValue : rawValue.trim();
    if (value === "" && !rule.optional) errors.push({ field: rule.name, message: `Enter ${rule.what}.` });
    else if (value.length > rule.max) errors.push({ field: rule.name, message: `${rule.what[0]!.toUpperCase()}${rule.what.slice(1)} is too long.` });
    out[rule.name] = value;
  }
  if (errors.length > 0) throw new FormInvalid(errors);
  return out;
}

/** The form's errors for a refused submission; anything that is not the member's to fix is rethrown. */
export function formErrorsOf(error: unknown, fieldsInForm: string[]): FormError[] {
  if (error instanceof FormInvalid) return error.errors;
  // Errors a person can act on come back with the form; a bug or a foreign request does not.
  if (
    !(error instanceof AuthError) ||
    ["internal_error", "unknown_tenant", "origin_mismatch", "payload_too_large", "unsupported_media_type"].includes(error.code)
  )
    throw error;
  const field = fieldForError(error.code, error.details, fieldsInForm);
  return [{ ...(field ? { field } : {}), code: error.code, message: messageForError(error.code, error.message, error.details) }];
}

/** The status a refused form is answered with: the flow's, or 400 for FormInvalid. */
export function statusOf(error: unknown): number {
  return error instanceof AuthError ? error.status : 400;
}

/** The link was used, expired or never existed: its page offers a new one instead of the button. */
export function isInvalidToken(error: unknown): boolean {
  return error instanceof AuthError && error.code === "invalid_token";
}

/** The JSON route's bound for a field (src/http/schemas.ts), so both paths accept the same lengths. */
export function maxLengthOf(schema: unknown): number {
  const max = (schema as { maxLength?: unknown }).maxLength;
  if (typeof max !== "number") throw new Error("maxLengthOf: the schema has no maxLength");
  return max;
}

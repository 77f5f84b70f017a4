/**
 * How requests are validated (contract.md#d4, contract.md#issue-16): one ajv per kind of input, both built by
 * Fastify's own compiler from the same shared schemas.
 *
 * - Bodies, path parameters and headers: no coercion. A mistyped field is an error ("123" is not
 *   123), never silently converted.
 * - Query strings are text by nature, so a typed query parameter (an integer `limit`) is coerced
 *   from its digits; the schema, and so the OpenAPI document, can then say `integer` with bounds.
 *
 * An email is checked by the `pattern` of the one email rule (core/email-address.ts,
 * decisions.md#one-email-rule-issue-29), here and again by the flow, never by `format: "email"`: ajv-formats'
 * ASCII pattern refuses internationalised addresses the rule takes. The format stays an
 * annotation here, should a schema still carry it.
 */
import { AjvCompiler, type BuildCompilerFromPool } from "@fastify/ajv-compiler";

/** What Fastify hands a validator compiler per route part (the package's types call it a bare schema). */
interface RoutePart {
  schema: unknown;
  httpPart?: string;
}
type ValidatorOf = (route: RoutePart) => unknown;
type CompilerOptions = { customOptions?: Record<string, unknown>; onCreate?: (ajv: { addFormat(name: string, format: true): unknown }) => void };

/** Fastify's `ajv` option: strict, first error only (bounded work on hostile input). */
export const AJV_OPTIONS = {
  customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false },
  onCreate: (ajv) => void ajv.addFormat("email", true),
} satisfies CompilerOptions;

/** Fastify's `schemaController.compilersFactory.buildValidator`: query strings coerced, the rest strict. */
export function buildRequestValidators(): BuildCompilerFromPool {
  const compilers = AjvCompiler() as unknown as (externalSchemas: unknown, options: CompilerOptions) => ValidatorOf;
  const build = (externalSchemas: unknown, options: CompilerOptions = AJV_OPTIONS): ValidatorOf => {
    const strict = compilers(externalSchemas, options);
    const coercing = compilers(externalSchemas, { ...options, customOptions: { ...options.customOptions, coerceTypes: true } });
    return (route) => (route.httpPart === "querystring" ? coercing(route) : strict(route));
  };
  return build as unknown as BuildCompilerFromPool;
}

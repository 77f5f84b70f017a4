/** The CLI's usage errors, shared by its command groups (main.ts answers them as exit 2). */

/** Bad or missing arguments, an unknown command: `validation_failed`, exit 2. `field` names the argument. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly field = "command",
  ) {
    super(message);
  }
}

export function need(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`${what} is required`, what);
  return value;
}

/**
 * HTML escaping shared by every server-rendered page (the hosted pages and the dev inbox). Every
 * value that reaches markup goes through escapeHtml, attributes included (it escapes both quotes).
 */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** A fragment of markup that is already safe: only helpers in src/ui build these. */
export interface Html {
  readonly html: string;
}

export function raw(markup: string): Html {
  return { html: markup };
}

/**
 * Tagged template: interpolated strings are escaped, Html fragments (and arrays of them) are kept.
 * A long line of text goes on with a backslash at its end: the template's line continuation, which
 * puts nothing in the output (the line after it starts at column 0, as all template lines here do).
 */
export function html(strings: TemplateStringsArray, ...values: Array<string | number | Html | Html[] | undefined | null | false>): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += toMarkup(value) + strings[i + 1]!;
  });
  return { html: out };
}

function toMarkup(value: string | number | Html | Html[] | undefined | null | false): string {
  if (value === undefined || value === null || value === false) return "";
  if (Array.isArray(value)) return value.map((v) => v.html).join("");
  if (typeof value === "object") return value.html;
  return escapeHtml(String(value));
}

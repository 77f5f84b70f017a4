/**
 * Showing a refused submission without a reload, the way the server renders it: the error summary
 * (role="alert") filled and focused, the named field marked aria-invalid and described by its error.
 */
export interface ShownError {
  field?: string;
  message: string;
  /** hosted-pages.md#refusals: what can be done now, as links under the message (as the server renders them). */
  next?: { href: string; text: string }[];
}

export function clearErrors(form: HTMLFormElement, summary: HTMLElement | null): void {
  for (const error of form.querySelectorAll(".field-error")) error.remove();
  for (const input of form.querySelectorAll("[aria-invalid]")) {
    input.removeAttribute("aria-invalid");
    const describedBy = (input.getAttribute("aria-describedby") ?? "").split(" ").filter((id) => id && !id.endsWith("-error"));
    if (describedBy.length > 0) input.setAttribute("aria-describedby", describedBy.join(" "));
    else input.removeAttribute("aria-describedby");
  }
  if (summary) {
    summary.hidden = true;
    summary.replaceChildren();
  }
}

function markField(form: HTMLFormElement, error: ShownError): void {
  if (!error.field) return;
  const input = form.querySelector<HTMLInputElement>(`#${CSS.escape(error.field)}`);
  if (!input) return;
  const text = document.createElement("p");
  text.className = "field-error";
  text.id = `${error.field}-error`;
  const prefix = document.createElement("span");
  prefix.className = "visually-hidden";
  prefix.textContent = "Error: ";
  text.append(prefix, error.message);
  input.before(text);
  input.setAttribute("aria-invalid", "true");
  const describedBy = [text.id, ...(input.getAttribute("aria-describedby") ?? "").split(" ").filter(Boolean)];
  input.setAttribute("aria-describedby", describedBy.join(" "));
}

/** Fills the summary (textContent only: no message is parsed as markup) and moves focus to it. */
export function showErrors(form: HTMLFormElement, summary: HTMLElement | null, errors: ShownError[]): void {
  clearErrors(form, summary);
  for (const error of errors) markField(form, error);
  if (!summary) return;
  const title = document.createElement("h2");
  title.textContent = "There is a problem";
  const list = document.createElement("ul");
  for (const error of errors) {
    const item = document.createElement("li");
    if (error.field && form.querySelector(`#${CSS.escape(error.field)}`)) {
      const link = document.createElement("a");
      link.href = `#${error.field}`;
      link.textContent = error.message;
      item.append(link);
    } else {
      item.textContent = error.message;
    }
    if (error.next && error.next.length > 0) {
      const next = document.createElement("ul");
      next.className = "next-steps";
      for (const step of error.next) {
        const link = document.createElement("a");
        link.href = step.href;
        link.textContent = step.text;
        const stepItem = document.createElement("li");
        stepItem.append(link);
        next.append(stepItem);
      }
      item.append(next);
    }
    list.append(item);
  }
  summary.append(title, list);
  summary.hidden = false;
  summary.focus();
  if (!document.title.startsWith("Error: ")) document.title = `Error: ${document.title}`;
}

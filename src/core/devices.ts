/**
 * hosted-pages.md#readable-devices: "Chrome on Linux" for a session or an alert, from the User-Agent by
 * bowser (a maintained parser, MIT), never by our own regular expressions. Unknown or empty: undefined,
 * and the caller shows its own words.
 */
import Bowser from "bowser";

export function describeDevice(userAgent: string | null | undefined): string | undefined {
  if (userAgent === null || userAgent === undefined || userAgent.trim() === "") return undefined;
  const { browser, os } = Bowser.parse(userAgent);
  if (!browser.name) return undefined;
  return os.name ? `${browser.name} on ${os.name}` : browser.name;
}

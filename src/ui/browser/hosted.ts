/**
 * The hosted pages' browser script (bundled by `npm run build:ui` into dist/ui/hosted.js). The
 * pages work without it; it gives the ALTCHA widget its workers, keeps a submit pressed while the
 * widget is still solving, and sends forms through the API.
 */
import { sendFormsWhenBotCheckSolved } from "./bot-check.js";
import { enhanceForms } from "./enhance.js";

interface AltchaGlobal {
  algorithms: Map<string, () => Worker>;
}

/**
 * The widget's "external" build ships without workers: register ours, loaded from this origin
 * (the CSP allows workers from 'self' only, not the blob: URLs of the default build).
 */
function registerAltchaWorkers(): void {
  const altcha = (globalThis as { $altcha?: AltchaGlobal }).$altcha;
  if (!altcha) return;
  const pbkdf2 = () => new Worker("/ui/assets/altcha-worker-pbkdf2.js");
  const sha = () => new Worker("/ui/assets/altcha-worker-sha.js");
  for (const name of ["PBKDF2/SHA-256", "PBKDF2/SHA-384", "PBKDF2/SHA-512"]) altcha.algorithms.set(name, pbkdf2);
  for (const name of ["SHA-256", "SHA-384", "SHA-512"]) altcha.algorithms.set(name, sha);
}

registerAltchaWorkers();
sendFormsWhenBotCheckSolved(document);
enhanceForms(document);

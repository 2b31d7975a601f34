/**
 * The widget's one channel to the embedding site's developer: the browser console. Issue 5
 * asks for refusals (a disallowed origin, a bad site key) to be said there and never shown to
 * the visitor. The widget runs in the visitor's browser, where the service's logger can't go,
 * so this is the only module that touches `console`.
 */
const LOG_PREFIX = '[chat widget]';

export function reportToSiteDeveloper(message: string): void {
  console.error(`${LOG_PREFIX} ${message}`);
}

/**
 * The configuration's secrets: those derived from one root secret (the Twilio token, or the
 * widget's) when not given, and the values inside connection URLs and the widget sites' list that
 * the logger must redact.
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';

/** A secret derived from the root for one purpose, so every process of one deployment agrees without extra configuration. */
export const derivedSecret = (root: string, purpose: string) => createHmac('sha256', root).update(purpose).digest('hex');

/** The password in a connection URL, as written and decoded; none when it has none. */
export function urlPassword(url: string): string[] {
  try {
    const password = new URL(url).password;
    return password ? [password, decodeURIComponent(password)] : [];
  } catch {
    return [];
  }
}

const SiteSecretsSchema = z.array(z.looseObject({ identitySecret: z.string().optional() }));

/** Each widget site's identity secret (WEB_SITES is validated in full by the web channel). */
export function siteIdentitySecrets(sitesJson: string | undefined): string[] {
  if (!sitesJson) return [];
  try {
    const sites = SiteSecretsSchema.safeParse(JSON.parse(sitesJson));
    return sites.success ? sites.data.flatMap((site) => (site.identitySecret ? [site.identitySecret] : [])) : [];
  } catch {
    return [];
  }
}

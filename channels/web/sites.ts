/**
 * The websites the widget may run on: public key, allowed origins, display name, greeting,
 * accent colour and language — from WEB_SITES (JSON) — and, for a site that verifies its
 * signed-in users, the secret its backend signs them with (never sent to a browser). Without
 * WEB_SITES, one demo site serves the service's own /demo page.
 */
import { z } from 'zod';
import { ConfigError } from '../../src/errors/index.js';
import { formatIssues } from '../../src/errors/issues.js';

/** The languages the widget has words for (and the service's own words in a confirmation). */
const WIDGET_LANGUAGES = ['en', 'es', 'fr', 'de', 'pt', 'ar'] as const;

/** The visitor's language: the site's when it sets one, else the widget's own when it is one of ours. */
export function visitorLanguage(site: Pick<Site, 'language'>, widget: string | undefined): string | undefined {
  if (site.language) return site.language;
  return (WIDGET_LANGUAGES as readonly string[]).includes(widget ?? '') ? widget : undefined;
}

const origin = z.string().regex(/^https?:\/\/[^/\s]+$/, 'expected an origin such as https://shop.example.com (scheme and host, no path)');

const SiteSchema = z.object({
  key: z.string().regex(/^[A-Za-z0-9_-]{3,64}$/, 'expected 3–64 letters, digits, - or _'),
  name: z.string().min(1).max(80),
  origins: z.array(origin).min(1),
  greeting: z.string().max(300).default('Hi! How can I help you today?'),
  accentColor: z
    .string()
    .regex(/^#[0-9a-fA-F]{6}$/, 'expected a colour like #0b7285')
    .default('#0b7285'),
  // Unset: the visitor's browser language decides.
  language: z.enum(WIDGET_LANGUAGES).optional(),
  /** HMAC key the site's backend signs `data-user-id` (and email/name) with; see visitor-identity.ts. */
  identitySecret: z.string().min(32, 'expected at least 32 characters').optional(),
});
export type Site = z.infer<typeof SiteSchema>;

export const DEMO_SITE_KEY = 'demo';

export interface SiteRegistry {
  get(key: string): Site | undefined;
  allows(site: Site, requestOrigin: string | undefined): boolean;
  /** True when any site allows the origin (for CORS preflights, which carry no site). */
  anyAllows(requestOrigin: string | undefined): boolean;
  /** How many sites are configured: none (`WEB_SITES=[]`) switches the widget off. */
  size: number;
}

export function createSiteRegistry(sitesJson: string | undefined, publicBaseUrl: string, port: number): SiteRegistry {
  let sites: Site[];
  if (sitesJson) {
    let raw: unknown;
    try {
      raw = JSON.parse(sitesJson);
    } catch {
      throw new ConfigError('invalid configuration: WEB_SITES: expected a JSON array of sites');
    }
    const parsed = z.array(SiteSchema).safeParse(raw);
    if (!parsed.success) {
      throw new ConfigError(`invalid configuration: WEB_SITES: ${formatIssues(parsed.error.issues, '(sites)')}`);
    }
    sites = parsed.data;
  } else {
    sites = [
      SiteSchema.parse({
        key: DEMO_SITE_KEY,
        name: 'Demo',
        origins: [new URL(publicBaseUrl).origin, `http://localhost:${port}`, `http://127.0.0.1:${port}`],
      }),
    ];
  }
  const byKey = new Map(sites.map((site) => [site.key, site]));
  return {
    get: (key) => byKey.get(key),
    allows: (site, requestOrigin) => requestOrigin !== undefined && site.origins.includes(requestOrigin),
    anyAllows: (requestOrigin) => requestOrigin !== undefined && sites.some((site) => site.origins.includes(requestOrigin)),
    size: sites.length,
  };
}

/**
 * The languages the service writes its own words to customers in (en, es, fr, de, pt, ar: the
 * widget's), and how one is chosen: from codes the service checks against this list (the
 * model's `language` argument, the channel's `metadata.language`), never from the model's wording.
 * An unknown code is English.
 */

export const LANGUAGES = ['en', 'es', 'fr', 'de', 'pt', 'ar'] as const;
export type Language = (typeof LANGUAGES)[number];

/** The first of `codes` that names a catalogue language (an ISO 639-1 code: `es`, `es-MX`, `ES`); English for anything else. */
export function languageOf(...codes: readonly unknown[]): Language {
  for (const code of codes) {
    if (typeof code !== 'string') continue;
    const primary = code.trim().toLowerCase().split(/[-_]/)[0];
    if ((LANGUAGES as readonly string[]).includes(primary ?? '')) return primary as Language;
  }
  return 'en';
}

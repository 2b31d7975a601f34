/**
 * A team's name in the customer's language, for the service's own words about it (when a closed
 * team is back, that a person will answer): the operator's name for that language when
 * HANDOFF_TEAMS gives one (`labels`), else the team's `label` in English and the service's own
 * name for a sales or support team in the other five languages. Each name reads after "our".
 */
import type { Language } from './language.js';

type TeamKind = 'sales' | 'support';

const NAMES: Record<TeamKind, Record<Language, string>> = {
  sales: {
    en: 'sales team',
    es: 'equipo de ventas',
    fr: 'équipe commerciale',
    de: 'Vertriebsteam',
    pt: 'equipa comercial',
    ar: 'فريق المبيعات',
  },
  support: {
    en: 'support team',
    es: 'equipo de soporte',
    fr: "équipe d'assistance",
    de: 'Support-Team',
    pt: 'equipa de apoio',
    ar: 'فريق الدعم',
  },
};

/** The team's name in `language`. */
export function teamName(team: { id: TeamKind; label: string; labels?: Partial<Record<Language, string>> | undefined }, language: Language): string {
  return team.labels?.[language] ?? (language === 'en' ? team.label : NAMES[team.id][language]);
}

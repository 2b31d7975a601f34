/**
 * What a guidance entry is: the business's own instruction to its assistant, in words — a
 * category, its text (at most 2,000 characters, `{{contact.first_name}}`-style placeholders
 * allowed), where it applies (roles, channels, sites: absent means all) and, optionally, an
 * audience on what the service verified about the customer, never on what anyone claims. An
 * escalation entry may name a team: when the judge finds it applies, the turn hands over to it.
 * A published version is the whole set at once, numbered from 1.
 */
import { z } from 'zod';

export const CATEGORIES = ['style', 'clarification', 'escalation', 'policy'] as const;
const MAX_TEXT_CHARS = 2_000;
/** The placeholders an entry may use: each filled from what `identify` verified, never from the customer's words. */
const PLACEHOLDERS = ['contact.first_name', 'contact.name', 'contact.email', 'contact.customer_id'] as const;

const name = z.string().trim().min(1).max(80);
const list = z.array(name).min(1).max(50);

/** Who an entry is for, on verified contact attributes only (all given conditions must hold). */
const AudienceSchema = z
  .strictObject({
    /** true: only a customer the channel verified (linked to a contact); false: only an unverified one. */
    verified: z.boolean().optional(),
    /** Only a customer linked to one of these entities (ids as in the contact store). */
    entities: list.optional(),
    /** Only a customer whose verified email is at one of these domains. */
    emailDomains: z
      .array(
        z
          .string()
          .trim()
          .toLowerCase()
          .regex(/^[a-z0-9.-]+\.[a-z]{2,}$/, 'expected a domain such as example.com'),
      )
      .min(1)
      .max(50)
      .optional(),
  })
  .refine((audience) => Object.keys(audience).length > 0, 'an audience needs at least one condition (or leave it out)');

const ScopeSchema = z.strictObject({
  roles: list.optional(),
  channels: list.optional(),
  /** Widget site keys. An entry naming sites applies on the widget of those sites only. */
  sites: list.optional(),
  audience: AudienceSchema.optional(),
});

const PLACEHOLDER = /\{\{\s*([\w.]+)\s*\}\}/g;

export const EntryInputSchema = z
  .strictObject({
    category: z.enum(CATEGORIES),
    title: z.string().trim().min(1).max(120).optional(),
    text: z.string().trim().min(1).max(MAX_TEXT_CHARS),
    scope: ScopeSchema.default({}),
    /** Escalation only: the team an applying entry hands the conversation to. */
    team: z.enum(['sales', 'support']).optional(),
  })
  .superRefine((entry, context) => {
    if (entry.team && entry.category !== 'escalation') context.addIssue({ code: 'custom', path: ['team'], message: 'only an escalation entry names a team' });
    for (const [, placeholder] of entry.text.matchAll(PLACEHOLDER)) {
      if (!(PLACEHOLDERS as readonly string[]).includes(placeholder ?? ''))
        context.addIssue({ code: 'custom', path: ['text'], message: `unknown placeholder {{${placeholder}}}: expected one of ${PLACEHOLDERS.join(', ')}` });
    }
  });
export type EntryInput = z.infer<typeof EntryInputSchema>;

export interface GuidanceEntry extends EntryInput {
  /** `g_` and 12 hex digits. */
  id: string;
  updatedAt: string;
}

export const ENTRY_ID = /^g_[0-9a-f]{12}$/;

/** A published version: the whole set, as it was published. */
export interface PublishedVersion {
  version: number;
  entries: GuidanceEntry[];
  publishedAt: string;
  /** Set when this version restored an earlier one's entries. */
  restoredFrom?: number;
}

/** The placeholder pattern (`{{ contact.first_name }}`). */
export const placeholderPattern = () => new RegExp(PLACEHOLDER.source, 'g');

/** A rough token count (four characters a token): what the budgets are counted in. */
export const tokensOf = (text: string) => Math.ceil(text.length / 4);

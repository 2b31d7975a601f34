/**
 * `select_entity`: a customer linked to several business entities (companies, accounts)
 * chooses which one the conversation is about. With one entity, or a hint naming exactly one,
 * it selects without asking; otherwise it asks with a numbered list and the customer's reply
 * (a number or a name) resumes it. An answer that matches nothing is asked again once; after
 * that the conversation carries on without an entity. The choice is a session fact.
 * The question is in the customer's language: the model's `language` code, else the channel's
 * `metadata.language`, else English; the question asked again keeps it.
 * It offers only the entities of the caller the service verified (`context.caller`), never
 * a contact looked up from anything the model or the client wrote.
 */
import { z } from 'zod';
import { ToolInterrupt, WithSession, type AssistantTool, type Choice } from '../contracts/tool.js';
import { languageOf, LANGUAGES, type Language } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';

export type { ContactReader, LinkedCustomer } from '../contracts/tool.js';

const SELECT_ENTITY_TOOL_NAME = 'select_entity';

const InputSchema = z.object({
  hint: z.string().trim().max(120).optional().describe('The company or account the customer named, if any.'),
  // Any string: a code outside the catalogue is English, never a failed call.
  language: z.string().optional().describe('ISO 639-1 code of the language the customer writes in (e.g. "es"); the question is shown in it.'),
});

const PendingSchema = z.object({
  entities: z.array(z.object({ id: z.string(), name: z.string() })),
  attempts: z.number().int().nonnegative(),
  /** The language the question was asked in (absent: asked before questions had one, then the channel's). */
  language: z.enum(LANGUAGES).optional(),
});

const normalise = (text: string) =>
  text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

function matching(entities: readonly { id: string; name: string }[], answer: string) {
  const wanted = normalise(answer);
  if (!wanted) return undefined;
  const number = /^\d+$/.test(wanted) ? Number(wanted) : undefined;
  if (number !== undefined) return entities[number - 1];
  const exact = entities.filter((entity) => normalise(entity.name) === wanted);
  if (exact.length === 1) return exact[0];
  const partial = entities.filter((entity) => normalise(entity.name).includes(wanted) || wanted.includes(normalise(entity.name)));
  return partial.length === 1 ? partial[0] : undefined;
}

function question(entities: readonly { name: string }[], language: Language): string {
  const words = serviceWords(language);
  return [words.whichCompany, ...entities.map((entity, index) => `${index + 1}. ${entity.name}`), words.whichCompanyHint].join('\n');
}

/** The companies as answers to tap: the id names the entity, the label its name (cut to a list row's 24 characters). */
const entityChoices = (entities: readonly { id: string; name: string }[]): Choice[] =>
  entities.map((entity) => ({ id: `entity:${entity.id}`, label: entity.name.length > 24 ? `${entity.name.slice(0, 23)}…` : entity.name }));

const chosen = (entity: { id: string; name: string }) => ({
  output: { selected: entity },
  session: { entityId: entity.id, entityName: entity.name },
});

export function createSelectEntityTool(): AssistantTool {
  return {
    name: SELECT_ENTITY_TOOL_NAME,
    description:
      "Choose which of the customer's companies or accounts the conversation is about. Call it before looking up account data when the customer has several and none is selected.",
    origin: 'channel',
    category: 'session',
    effect: 'reversible',
    inputSchema: InputSchema,
    async execute(raw, context) {
      const { hint, language: written } = InputSchema.parse(raw);
      const entities = context.caller.kind === 'contact' ? context.caller.entities : [];
      if (entities.length === 0) return { selected: null, reason: 'This customer is not linked to any company or account.' };
      const only = entities.length === 1 ? entities[0] : hint ? matching(entities, hint) : undefined;
      if (only) {
        const { output, session } = chosen(only);
        return new WithSession(output, session);
      }
      const language = languageOf(written, context.metadata.language);
      return new ToolInterrupt(question(entities, language), { entities, attempts: 0, language }, entityChoices(entities), undefined, language);
    },
    async resume(answer, data, context) {
      const pending = PendingSchema.parse(data);
      // A tap names the entity by id; it must be one this question offered (else it is read as typed text).
      const tapped = context.metadata.choice?.startsWith('entity:')
        ? pending.entities.find((entity) => `entity:${entity.id}` === context.metadata.choice)
        : undefined;
      const entity = tapped ?? matching(pending.entities, answer);
      if (entity) return chosen(entity);
      if (pending.attempts === 0) {
        const language = pending.language ?? languageOf(context.metadata.language);
        return {
          askAgain: new ToolInterrupt(
            serviceWords(language).whichCompanyAgain.replace('{count}', String(pending.entities.length)),
            { ...pending, attempts: 1, language },
            entityChoices(pending.entities),
            undefined,
            language,
          ),
        };
      }
      return { output: { selected: null, note: 'The customer did not choose a company; carry on without one.' } };
    },
  };
}

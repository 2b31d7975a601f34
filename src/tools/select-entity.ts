/**
 * `select_entity`: a customer linked to several business entities (companies, accounts)
 * chooses which one the conversation is about. With one entity, or a hint naming exactly one,
 * it selects without asking; otherwise it asks with a numbered list and the customer's reply
 * (a number or a name) resumes it. An answer that matches nothing is asked again once; after
 * that the conversation carries on without an entity. The choice is a session fact.
 * It offers only the entities of the caller the service verified (`context.caller`), never
 * a contact looked up from anything the model or the client wrote.
 */
import { z } from 'zod';
import { ToolInterrupt, WithSession, type AssistantTool, type Choice } from '../contracts/tool.js';

export type { ContactReader, LinkedCustomer } from '../contracts/tool.js';

const SELECT_ENTITY_TOOL_NAME = 'select_entity';

const InputSchema = z.object({
  hint: z.string().trim().max(120).optional().describe('The company or account the customer named, if any.'),
});

const PendingSchema = z.object({
  entities: z.array(z.object({ id: z.string(), name: z.string() })),
  attempts: z.number().int().nonnegative(),
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

const question = (entities: readonly { name: string }[]) =>
  ['Which company is this about?', ...entities.map((entity, index) => `${index + 1}. ${entity.name}`), 'Reply with the number or the name.'].join('\n');

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
      const { hint } = InputSchema.parse(raw);
      const entities = context.caller.kind === 'contact' ? context.caller.entities : [];
      if (entities.length === 0) return { selected: null, reason: 'This customer is not linked to any company or account.' };
      const only = entities.length === 1 ? entities[0] : hint ? matching(entities, hint) : undefined;
      if (only) {
        const { output, session } = chosen(only);
        return new WithSession(output, session);
      }
      return new ToolInterrupt(question(entities), { entities, attempts: 0 }, entityChoices(entities));
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
        return {
          askAgain: new ToolInterrupt(
            `Sorry, I didn't catch which one. Reply with a number from 1 to ${pending.entities.length}, or the company's name.`,
            { ...pending, attempts: 1 },
            entityChoices(pending.entities),
          ),
        };
      }
      return { output: { selected: null, note: 'The customer did not choose a company; carry on without one.' } };
    },
  };
}

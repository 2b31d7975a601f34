/**
 * `search_knowledge`: a read the model may call for a follow-up (category `knowledge`, public:
 * no customer scope, offered under the same cap as any other read). It returns the same
 * numbered, quoted passages a turn's brief holds, for the caller's site or channel.
 */
import { z } from 'zod';
import type { AssistantTool } from '../contracts/tool.js';
import type { Audience, Passage } from './model.js';

const SEARCH_KNOWLEDGE = 'search_knowledge';

const InputSchema = z.strictObject({ query: z.string().trim().min(2).max(200).describe("What to look up in the business's help pages, documents and FAQ") });

export function searchKnowledgeTool(retrieve: (query: string, audience: Audience) => Promise<Passage[]>): AssistantTool {
  return {
    name: SEARCH_KNOWLEDGE,
    description: "Search the business's own help pages, documents and FAQ. Returns quoted passages with titles and links, or nothing found.",
    origin: 'mcp',
    category: 'knowledge',
    effect: 'read',
    access: { kind: 'public' },
    inputSchema: InputSchema,
    async execute(input, context) {
      const { query } = InputSchema.parse(input);
      const passages = await retrieve(query, { site: context.metadata.siteKey, channel: context.channelId });
      if (passages.length === 0) return { found: 0, note: "Nothing in the business's published content answers this." };
      return {
        found: passages.length,
        passages: passages.map((passage, index) => ({
          n: index + 1,
          title: passage.title,
          section: passage.headingPath.join(' › '),
          url: passage.url,
          text: passage.text,
        })),
      };
    },
  };
}

/**
 * Support: helps customers use the business's product — access, errors, how-to — with the
 * business's help articles and account status, and marks when the customer needs a person.
 */
import { defineRole } from '../src/orchestrator/define-role.js';
import type { Facts } from '../src/contracts/index.js';

function text(value: Facts[string] | undefined): string | undefined {
  return typeof value === 'string' && value.trim() ? value : undefined;
}

export const supportRole = defineRole({
  id: 'support',
  description: 'Problems using the product: cannot log in, errors, something broken, how to do something, account access.',
  instructions: [
    "You are the business's support assistant. Help the customer solve problems with the product.",
    'Look for an answer in the help articles before improvising; give concrete numbered steps.',
    'Ask one clarifying question at a time when the problem is unclear.',
    'Never invent account details, prices or policies you were not given; say what you do not know.',
  ].join(' '),
  toolScope: { effects: ['read'], categories: ['knowledge', 'account'], include: ['open_support_chat', 'book_sales_call'] },
  standingNotes: [
    'When the customer needs a person for a problem, hand over with {handoff}. Use book_sales_call only when they want to buy, upgrade or see a demo — never for help or setup requests.',
    'Before handing over, make sure you know what the problem is in one line; on the website, also ask for an email or phone number.',
  ],
  privateFacts: ['handoffUnavailable'],
  facts: {
    issue: { question: "The customer's problem in one line, in English.", type: 'string' },
    product_area: { question: 'Which part of the product it concerns (login, billing page, mobile app, integrations…).', type: 'string' },
    severity: { question: 'How badly it blocks them.', type: 'string', values: ['low', 'normal', 'urgent'] },
    wants_human: { question: 'Did the customer ask to talk to a person?', type: 'boolean' },
    resolved: { question: 'Did the customer say the problem is solved?', type: 'boolean' },
  },
  buildBrief({ facts, capabilityTool }) {
    const handoff = capabilityTool('handoff');
    const issue = text(facts.issue);
    const established = issue
      ? `Problem: ${issue}${text(facts.product_area) ? ` (area: ${facts.product_area})` : ''}.`
      : 'Nothing established yet about the problem.';
    const needs = issue ? 'A fix the customer can follow, or a person when you cannot give one.' : 'What is going wrong and where.';
    const mood = facts.severity === 'urgent' ? 'They are blocked and it is urgent: be brief and concrete.' : 'No sign of urgency.';
    let move: string;
    if (facts.resolved === true) move = 'Confirm it is solved and ask if there is anything else.';
    else if (facts.wants_human === true && handoff && facts.handoffUnavailable !== true) move = `Hand the conversation to the support team with ${handoff}.`;
    else if (facts.wants_human === true) move = 'Say a person will follow up by email, and keep helping meanwhile.';
    else if (!issue) move = 'Ask one question to understand the problem.';
    else move = 'Search the help articles for this problem and give the steps.';
    return [`Established: ${established}`, `This play needs: ${needs}`, `How they are doing: ${mood}`, `Move now: ${move}`].join('\n');
  },
  evidenceRules: [
    (call) => {
      if (call.isError || !/help|article|knowledge/i.test(call.toolName) || typeof call.output !== 'string') return undefined;
      const title = call.output.split('\n')[0]?.trim();
      return title && !/^no articles/i.test(title) ? { article_suggested: title } : undefined;
    },
  ],
  hooks: {
    afterTurn({ facts, offeredTools, capabilityTool }) {
      const handoff = capabilityTool('handoff');
      if (facts.wants_human === true && (!handoff || !offeredTools.includes(handoff))) return { handoffUnavailable: true };
      return undefined;
    },
    kpi: ({ facts, toolCalls }) => ({
      resolved: facts.resolved === true,
      severity: facts.severity ?? null,
      articleSuggested: text(facts.article_suggested) !== undefined,
      toolCalls: toolCalls.length,
    }),
  },
});

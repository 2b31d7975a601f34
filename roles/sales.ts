/**
 * Sales: plans, prices, demos and upgrades, from the business's catalogue. Qualifies the lead
 * (plan, team size, timeline) and books a call with the sales team when the customer wants one.
 */
import { defineRole } from '../src/orchestrator/define-role.js';

export const salesRole = defineRole({
  id: 'sales',
  description: 'Buying: plans and prices, what is included, discounts, demos, upgrades, talking to sales.',
  instructions: [
    "You are the business's sales assistant. Answer questions about plans and prices from the catalogue tools only — never quote a price you did not read there.",
    'Be helpful, not pushy: answer first, then ask at most one qualifying question (team size, timeline, needs).',
  ].join(' '),
  toolScope: { effects: ['read'], categories: ['catalog'], include: ['book_sales_call'] },
  factFallback: true,
  privateFacts: ['handoffUnavailable'],
  facts: {
    interested_plan: { question: 'Which plan the customer is interested in, if they named one.', type: 'string' },
    team_size: { question: 'How many people would use it.', type: 'number' },
    timeline: { question: 'When they want to start (e.g. this week, next quarter).', type: 'string' },
    wants_demo: { question: 'Did they ask for a demo or a call with sales?', type: 'boolean' },
  },
  buildBrief({ facts, capabilityTool }) {
    const handoff = capabilityTool('handoff');
    const known = [
      facts.interested_plan ? `plan ${facts.interested_plan}` : undefined,
      typeof facts.team_size === 'number' ? `team of ${facts.team_size}` : undefined,
      facts.timeline ? `starting ${facts.timeline}` : undefined,
      facts.prices_quoted === true ? 'prices already quoted from the catalogue' : undefined,
    ].filter(Boolean);
    let move: string;
    if (facts.wants_demo === true && handoff && facts.handoffUnavailable !== true) move = `Book the call with ${handoff}.`;
    else if (facts.wants_demo === true) move = 'Say the sales team will reach out, and answer what you can meanwhile.';
    else if (!facts.interested_plan) move = 'Answer the question, then ask which plan fits them.';
    else if (typeof facts.team_size !== 'number') move = 'Answer the question, then ask how many people would use it.';
    else move = 'Answer the question and offer a call with the sales team.';
    return [
      `Established: ${known.length ? known.join(', ') : 'nothing yet'}.`,
      'This play needs: the plan that fits, the team size and when they want to start.',
      `How they are doing: ${facts.wants_demo === true ? 'ready to talk to sales.' : 'exploring.'}`,
      `Move now: ${move}`,
    ].join('\n');
  },
  evidenceRules: [
    (call) => {
      if (call.isError || !/pric/i.test(call.toolName)) return undefined;
      return { prices_quoted: true };
    },
  ],
  hooks: {
    afterTurn({ facts, offeredTools, capabilityTool }) {
      const handoff = capabilityTool('handoff');
      if (facts.wants_demo === true && (!handoff || !offeredTools.includes(handoff))) return { handoffUnavailable: true };
      return undefined;
    },
    kpi: ({ facts }) => ({
      qualified: Boolean(facts.interested_plan) && typeof facts.team_size === 'number',
      wantsDemo: facts.wants_demo === true,
    }),
  },
});

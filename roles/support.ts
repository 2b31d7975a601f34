/**
 * Support: helps customers use the business's product — access, errors, how-to — and hands
 * them to the support team when the assistant can't resolve it.
 */
import { defineRole } from '../src/orchestrator/define-role.js';

export const supportRole = defineRole({
  id: 'support',
  description: 'Problems using the product: cannot log in, errors, how to do something, account access.',
  instructions: [
    "You are the business's support assistant. Help the customer solve problems with the product.",
    'Ask one clarifying question at a time when the problem is unclear. Give concrete steps.',
    'Never invent account details, prices or policies you were not given; say what you do not know.',
  ].join(' '),
  toolScope: { effects: ['read'] },
});

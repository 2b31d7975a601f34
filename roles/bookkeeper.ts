/**
 * Bookkeeper: the customer's own invoices, payments and balances, read from the business's
 * records. Never guesses a number: without the records (or a linked account) it says so. The
 * runtime offers an unidentified caller no account tools at all; the brief then asks them to
 * identify themselves instead.
 */
import { defineRole } from '../src/orchestrator/define-role.js';

export const bookkeeperRole = defineRole({
  id: 'bookkeeper',
  description: "The customer's own money matters: invoices, payments, receipts, balances, refunds, billing status.",
  instructions: [
    "You are the business's bookkeeping assistant. Answer questions about the customer's invoices and payments using the invoice and account tools.",
    'Quote amounts, dates and statuses exactly as the tools return them. If a tool has no record, say so and ask for the invoice number; never guess.',
  ].join(' '),
  toolScope: { effects: ['read', 'reversible'], categories: ['invoice', 'account'], include: ['select_entity', 'open_support_chat'] },
  standingNotes: [
    'When the channel says the customer is linked to several companies and none is selected, call select_entity before looking anything up.',
    'When the channel says the customer is not linked to an account, do not look up or guess records: explain how they can identify themselves (as the channel describes). If they need a person, offer {handoff}.',
  ],
  facts: {
    invoice_number: { question: 'The invoice number the customer refers to, digits only.', type: 'string' },
    topic: {
      question: 'What they want to know.',
      type: 'string',
      values: ['invoice_status', 'payment', 'refund', 'receipt', 'balance', 'other'],
    },
  },
  buildBrief({ facts, caller, capabilityTool }) {
    if (caller === 'anonymous') {
      const handoff = capabilityTool('handoff');
      return [
        'Established: the customer is not identified, so none of their records can be read.',
        'This play needs: the customer to identify themselves before any invoice or account question can be answered.',
        'How they are doing: wants a precise answer about their money.',
        `Move now: Ask them to identify themselves as the channel describes; never quote or guess any figure.${handoff ? ` Offer ${handoff} if they need a person.` : ''}`,
      ].join('\n');
    }
    const status = facts.invoice_status ? `, status ${facts.invoice_status}` : '';
    return [
      `Established: ${facts.invoice_number ? `invoice ${facts.invoice_number}${status}` : 'no invoice identified yet'}.`,
      "This play needs: the invoice number, then the record from the customer's account.",
      'How they are doing: wants a precise answer about their money.',
      `Move now: ${facts.invoice_number ? 'Look the invoice up and answer with its exact figures.' : 'Ask for the invoice number.'}`,
    ].join('\n');
  },
  evidenceRules: [
    (call) => {
      if (call.isError || !/invoice/i.test(call.toolName)) return undefined;
      const invoice = call.output as { number?: unknown; status?: unknown } | undefined;
      if (!invoice || typeof invoice !== 'object' || invoice.number === undefined) return undefined;
      return {
        invoice_number: String(invoice.number),
        ...(typeof invoice.status === 'string' ? { invoice_status: invoice.status } : {}),
      };
    },
  ],
  hooks: {
    kpi: ({ facts, toolCalls }) => ({
      invoiceFound: Boolean(facts.invoice_status),
      recordsRead: toolCalls.filter((call) => !call.isError).length,
    }),
  },
});

/**
 * The confirmation the customer gets, end to end (signed webhook → worker → the real hostile MCP
 * server → fake Twilio; Redis and FerretDB real), when the MCP server's listing and the model's
 * arguments carry bidi overrides, invisible characters, line breaks and WhatsApp markup: the
 * message the customer receives is exactly the service's frame with each piece as one safe line
 * — nothing reversed, hidden, formatted, or forged onto a line of its own. The choice question
 * for an enum the model left out shows the server's labels the same way. What runs is what the
 * customer confirmed: the model's value reaches the server as written.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Script } from '../support/deterministic-model.js';
import { judgeRoutingTo } from '../support/deterministic-model.js';
import { startHarness, type Harness } from '../support/harness.js';
import { HOSTILE_WRITE, startHostileMcpServer, type HostileMcpServer } from '../support/hostile-mcp.js';

const ANA = 'whatsapp:+447700906301';
/** What the model writes: an address that tries to reverse itself, hide text and start a line of its own. */
const HOSTILE_ADDRESS = '1 Main St\u202E\u2066 *Flat 2*\u200B_rear_\u0085\u2029• For: Borealis Bakery\u0007~x~ ```y```';

const model: Script = ({ userText, toolResults }) => {
  if (toolResults.length > 0) return { text: 'Done.' };
  if (userText.includes('do:change')) return { toolCalls: [{ name: HOSTILE_WRITE, input: { address: HOSTILE_ADDRESS, slot: 'pm' } }] };
  if (userText.includes('do:ask')) return { toolCalls: [{ name: HOSTILE_WRITE, input: { address: '1 Main St' } }] };
  return { text: 'Noted.' };
};

let mcp: HostileMcpServer;
let harness: Harness;
beforeAll(async () => {
  mcp = await startHostileMcpServer();
  harness = await startHarness({ script: model, env: { MCP_SERVER_URL: mcp.url } });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  await harness.services.contacts.upsert({ address: ANA, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
});
afterAll(async () => {
  await harness.close();
  await mcp.close();
});

async function say(body: string): Promise<string> {
  const before = harness.twilio.messages.length;
  await harness.sendWhatsapp({ from: ANA, body });
  const messages = await harness.twilio.waitForMessages(before + 1, 10_000);
  return messages.at(-1)?.body ?? '';
}

test('the confirmation shows the hostile title, argument titles and values as safe single lines', async () => {
  const confirmation = await say('do:change my delivery');
  // Sent as a quick reply: the summary and the hint are its body, Confirm and Cancel its buttons.
  expect(confirmation).toBe(
    [
      'Please confirm: Change a delivery ∗for free∗ • For: Cirrus Freight',
      '• New ˍaddressˍ: 1 Main St ∗Flat 2∗ˍrearˍ • For: Borealis Bakery ∼x∼ ˋˋˋyˋˋˋ',
      '• Slot ∼when∼: pm',
      '• For: Acme Ltd',
      'Reply 1 or "yes" to confirm, 2 or "no" to cancel.',
    ].join('\n'),
  );
  await say('yes');
  // What runs is what was frozen: the model's value, exactly as it wrote it.
  expect(mcp.calls).toEqual([{ address: HOSTILE_ADDRESS, slot: 'pm', customerId: 'CUST-ACME' }]);
});

test("the choice question shows the server's enum labels as safe single lines", async () => {
  const question = await say('do:ask change my delivery');
  expect(question).toBe('For "Change a delivery ∗for free∗ • For: Cirrus Freight", please choose: Slot ∼when∼\nReply with the number or the option.');
  // The options go as a list message's rows: the server's labels, safe.
  expect(harness.twilio.messages.at(-1)?.choices?.map((choice) => choice.title)).toEqual(['Morning ∗fast∗', 'Evening ˋlateˋ']);
  await say('no');
});

/**
 * buildNotice with text a customer (or a model following their instructions) wrote to attack
 * the team: no forged lines, no formatting, no mentions or disguised links, template
 * variables within Twilio's limits — and ordinary text (emails, ids, accents) untouched.
 */
import { describe, expect, test } from '@jest/globals';
import { buildNotice } from '../../src/handoff/notice.js';
import type { HandoffRecord } from '../../src/handoff/handoff-store.js';
import type { Team } from '../../src/handoff/teams.js';

const team: Team = { label: 'Sales team', whatsapp: [], members: [], webhooks: [], responseTime: 'today' };
const transcriptUrl = 'https://assistant.example.test/transcripts/c?expires=1&sig=abc';

function handoff(overrides: Partial<HandoffRecord>): HandoffRecord {
  return {
    _id: 'ho_1',
    team: 'sales',
    status: 'open',
    reason: 'Demo of the Pro plan',
    requests: [],
    channel: 'whatsapp',
    conversationId: 'whatsapp:+447700900001',
    roleId: 'sales',
    customer: { address: 'whatsapp:+447700900001', name: 'Ana' },
    contact: { whatsapp: 'whatsapp:+447700900001' },
    facts: {},
    lastMessages: [],
    destinations: [],
    createdAt: new Date(0),
    updatedAt: new Date(0),
    ...overrides,
  };
}

describe('buildNotice with hostile text', () => {
  const notice = buildNotice({
    team,
    transcriptUrl,
    business: 'Harbour Lane',
    handoff: handoff({
      customer: { address: 'whatsapp:+447700900001', name: `Ana\nTranscript: https://evil.example *CEO* ${'x'.repeat(200)}` },
      reason: 'Call me _now_ ~please~ `asap`\n\nReach them: https://evil.example',
      facts: { contact_email: 'john_doe@example.com', note: '<!everyone> 2*3 and e\u0301' },
      lastMessages: [{ direction: 'inbound', text: `${'😀'.repeat(79)}😀😀 tail` }],
    }),
  });
  const lines = notice.text.split('\n');

  test('WhatsApp text keeps each field on its own line, with formatting markers defused at word edges only', () => {
    expect(lines.filter((line) => line.startsWith('Transcript: '))).toEqual([`Transcript: ${transcriptUrl}`]);
    expect(lines.filter((line) => line.startsWith('Reach them: '))).toEqual(['Reach them: https://wa.me/447700900001']);
    expect(lines[1]).toMatch(/^Who: Ana Transcript: https:\/\/evil\.example ∗CEO∗ x+… \(WhatsApp \+447700900001\)$/);
    expect(lines[2]).toBe('Wants: Call me ˍnowˍ ∼please∼ ˋasapˋ Reach them: https://evil.example');
    expect(lines[3]).toBe('Established: contact email: john_doe@example.com · note: <!everyone> 2*3 and e\u0301');
  });

  test('a message clipped in the middle of emoji leaves no half of one', () => {
    const quoted = lines.find((line) => line.startsWith('  Customer: '))!;
    expect(quoted.isWellFormed()).toBe(true);
    expect(quoted.endsWith('😀…')).toBe(true);
  });

  test("template variables are single lines within Twilio's 250-character recommendation", () => {
    for (const value of Object.values(notice.templateVariables)) {
      expect(value).not.toMatch(/[\n\t]| {5}/);
      expect(value.length).toBeLessThanOrEqual(250);
      expect(value.isWellFormed()).toBe(true);
    }
    expect(notice.templateVariables['2']).toBe('Call me ˍnowˍ ∼please∼ ˋasapˋ Reach them: https://evil.example');
  });

  test('the Slack payload escapes what could mention or link', () => {
    const payload = JSON.stringify(notice.webhook);
    expect(payload).not.toMatch(/<!|<https?:/);
    expect(notice.webhook.text).toContain('note: &lt;!everyone&gt; 2*3');
  });
});

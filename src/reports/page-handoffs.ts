/**
 * The reports page's "Hand-offs waiting now": each hand-off still open or taken that no teammate
 * has answered yet, oldest first, with how long it has waited, its team, channel and role, and a
 * link to its conversation's transcript page. None: a plain sentence.
 */
import { escapeHtml } from './charts.js';
import { waitText } from './tables.js';
import type { WaitingNow } from './waiting-handoffs.js';

const STATUS = { open: 'not taken', taken: 'taken, no reply yet' } as const;

export function waitingSection(waiting: WaitingNow | undefined): string {
  if (!waiting) return '';
  const heading = '<h2 id="t-waiting">Hand-offs waiting now</h2>';
  if (waiting.handoffs.length === 0) {
    return `<section aria-labelledby="t-waiting">${heading}<p class="note">No hand-off is waiting for a teammate's first reply.</p></section>`;
  }
  const rows = waiting.handoffs
    .map(
      (one) =>
        `<tr><th scope="row">${escapeHtml(one.since.slice(0, 16).replace('T', ' '))}</th><td>${escapeHtml(waitText(one.waitingSeconds))}</td><td>${escapeHtml(one.team)}</td><td>${escapeHtml(one.channel)}</td><td>${escapeHtml(one.role)}</td><td>${STATUS[one.status]}</td><td><a href="${escapeHtml(one.transcript)}">Open the conversation</a></td></tr>`,
    )
    .join('');
  const more = waiting.more ? '<p class="note">Only the oldest 500 open hand-offs were looked at.</p>' : '';
  return `<section aria-labelledby="t-waiting">${heading}<p>${waiting.handoffs.length} waiting for a teammate's first reply, oldest first (UTC).</p>${more}<div class="scroll"><table><thead><tr><th scope="col">opened</th><th scope="col">waiting</th><th scope="col">team</th><th scope="col">channel</th><th scope="col">role</th><th scope="col">status</th><th scope="col">conversation</th></tr></thead><tbody>${rows}</tbody></table></div></section>`;
}

/**
 * The guidance page's simulations section: a "Run simulations" button (a plain form post: the
 * page runs no script) that runs every saved scenario against the draft, and, on the page that
 * answers it, each scenario's result with every criterion's pass or fail and the grader's reason.
 * Scenarios are saved by running them once (`npm run simulate`, `POST /admin/simulations/run`).
 */
import { escapeHtml } from '../reports/charts.js';
import type { SimulationResult } from './simulation-model.js';

function resultTable(result: SimulationResult, index: number): string {
  const rows = result.verdicts
    .map(
      (verdict) =>
        `<tr><td>${escapeHtml(verdict.criterion)}</td><td>${verdict.passed ? 'Pass' : '<strong>Fail</strong>'}${result.flipped.includes(verdict.criterion) ? ' (changed since the last run)' : ''}</td><td>${escapeHtml(verdict.reason)}</td></tr>`,
    )
    .join('');
  const id = `h-sim-${index}`;
  return `<section aria-labelledby="${id}"><h3 id="${id}">${escapeHtml(result.scenario.name)}: ${result.passed ? 'passed' : 'failed'}</h3><div class="scroll"><table><thead><tr><th scope="col">Criterion</th><th scope="col">Result</th><th scope="col">Reason</th></tr></thead><tbody>${rows}</tbody></table></div></section>`;
}

/** The section; `results` those of the run this page answers (absent: no run yet on this page). */
export function renderSimulations(base: string, results: readonly SimulationResult[] | undefined): string {
  const summary =
    results === undefined
      ? ''
      : results.length === 0
        ? '<p role="status">No scenario is saved yet: run one first with <code>npm run simulate</code>.</p>'
        : `<p role="status">${results.filter((result) => result.passed).length} of ${results.length} scenarios passed against the draft.</p>${results.map(resultTable).join('')}`;
  return `<section aria-labelledby="h-sim"><h2 id="h-sim">Simulations</h2><p class="note">Runs every saved scenario against the draft: a simulated customer converses with the assistant, then each success criterion is judged. Nothing is sent, no team is told and no change runs: a write is only proposed, a hand-off only recorded.</p><form method="post" action="${base}/simulations"><button type="submit">Run simulations</button></form>${summary}</section>`;
}

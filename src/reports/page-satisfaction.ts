/**
 * The reports page's satisfaction section: the mean and the response rate, the 1–5 spread as
 * bars drawn on the server (its figures in the table below it), the breakdown table (its CSV),
 * the CSV of every answer, and the latest comments, each linked to its conversation's
 * transcript page. Nothing asked in the range: a plain sentence.
 */
import { escapeHtml } from './charts.js';
import type { CsatFigures } from './satisfaction.js';

const WIDTH = 360;
const ROW = 26;
const LABEL = 60;

/** Five horizontal bars, 5 at the top; each bar's share of the answers at its end. */
function spreadChart(csat: CsatFigures): string {
  const ratings = ['5', '4', '3', '2', '1'] as const;
  const most = Math.max(1, ...ratings.map((rating) => csat.distribution[rating]));
  const bars = ratings
    .map((rating, index) => {
      const n = csat.distribution[rating];
      const width = ((WIDTH - LABEL - 60) * n) / most;
      const y = index * ROW + 4;
      return `<text class="axis" x="0" y="${y + 14}">${rating} / 5</text><rect class="s1" x="${LABEL}" y="${y}" width="${width.toFixed(1)}" height="${ROW - 8}"><title>${rating} / 5: ${n}</title></rect><text class="axis" x="${(LABEL + width + 6).toFixed(1)}" y="${y + 14}">${n}</text>`;
    })
    .join('');
  const description = ratings.map((rating) => `${rating}: ${csat.distribution[rating]}`).join(', ');
  return `<figure class="chart spread"><svg viewBox="0 0 ${WIDTH} ${ROW * 5 + 4}" role="img" aria-labelledby="c-csat-t c-csat-d" xmlns="http://www.w3.org/2000/svg"><title id="c-csat-t">Ratings, 1 to 5</title><desc id="c-csat-d">${escapeHtml(description)}</desc>${bars}</svg><figcaption>How many answers gave each rating</figcaption></figure>`;
}

const percent = (value: number) => `${(100 * value).toFixed(0)}%`;

export function satisfactionSection(base: string, query: string, csat: CsatFigures | null, breakdown: string): string {
  const heading = `<h2 id="t-csat">Satisfaction</h2>`;
  if (!csat) return `<section aria-labelledby="t-csat">${heading}<p class="note">No satisfaction question was asked in this range.</p></section>`;
  const mean = csat.score === null ? 'no rating yet' : `${csat.score.toFixed(2)} / 5`;
  const comments = csat.comments.length
    ? `<ol class="comments">${csat.comments
        .map(
          (comment) =>
            `<li><span class="rating">${comment.rating} / 5</span> <q>${escapeHtml(comment.text)}</q> <span class="note">${escapeHtml(comment.at.slice(0, 16).replace('T', ' '))} · ${escapeHtml(comment.channel)}</span> <a href="${escapeHtml(comment.transcript)}">Open the conversation</a></li>`,
        )
        .join('')}</ol>`
    : '<p class="note">No comments in this range.</p>';
  return `<section aria-labelledby="t-csat">${heading}<p>${escapeHtml(mean)} from ${csat.responses} answers to ${csat.asked} questions asked (${percent(csat.responseRate)} answered). <a href="${base}/csv/answers.csv?${query}" download>Download every answer (CSV)</a></p>${spreadChart(csat)}${breakdown}<h3>Latest comments</h3>${comments}</section>`;
}

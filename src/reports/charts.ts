/**
 * Charts drawn on the server as inline SVG: no script, no CDN, nothing the CSP must allow but
 * the page's one hashed style sheet. Colours are classes the style sheet sets (light and dark);
 * each chart has a title and a description for screen readers, and its figures are in a table
 * below it. A period not yet settled (its figures may still change) is drawn lighter and dashed,
 * says so in its tooltip, and the legend explains it.
 */

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char);

export interface Series {
  label: string;
  /** A class of the style sheet (`s1`, `s2`, `s3`). */
  className: string;
  values: number[];
}

const WIDTH = 720;
const HEIGHT = 220;
const PAD = { left: 44, right: 8, top: 12, bottom: 28 };

function niceMax(value: number): number {
  if (value <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

/** A day, week or month on the chart: its axis label, its name in tooltips, whether it is settled. */
export interface Slot {
  label: string;
  name: string;
  settled: boolean;
}

/** Grouped bars per period; `id` names the title and description for aria-labelledby. */
export function barChart(id: string, title: string, days: readonly Slot[], series: readonly Series[]): string {
  const max = niceMax(Math.max(0, ...series.flatMap((one) => one.values)));
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotWidth / Math.max(1, days.length);
  const barWidth = Math.max(1, (slot * 0.8) / Math.max(1, series.length));
  const y = (value: number) => PAD.top + plotHeight - (value / max) * plotHeight;
  const parts: string[] = [];
  for (const tick of [0, 0.5, 1]) {
    const value = max * tick;
    parts.push(
      `<line class="grid" x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(value).toFixed(1)}" y2="${y(value).toFixed(1)}"/>`,
      `<text class="axis" x="${PAD.left - 6}" y="${(y(value) + 4).toFixed(1)}" text-anchor="end">${formatTick(value)}</text>`,
    );
  }
  days.forEach((day, index) => {
    series.forEach((one, position) => {
      const value = one.values[index] ?? 0;
      const x = PAD.left + index * slot + slot * 0.1 + position * barWidth;
      const unsettled = day.settled ? '' : ' unsettled';
      parts.push(
        `<rect class="${one.className}${unsettled}" x="${x.toFixed(1)}" y="${y(value).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${(PAD.top + plotHeight - y(value)).toFixed(1)}"><title>${escapeHtml(`${day.name} · ${one.label}: ${value}${unsettled ? ' (not yet settled)' : ''}`)}</title></rect>`,
      );
    });
  });
  const labelEvery = Math.max(1, Math.ceil(days.length / 8));
  days.forEach((day, index) => {
    if (index % labelEvery !== 0) return;
    parts.push(
      `<text class="axis" x="${(PAD.left + index * slot + slot / 2).toFixed(1)}" y="${HEIGHT - 8}" text-anchor="middle">${escapeHtml(day.label)}</text>`,
    );
  });
  const open = days.filter((day) => !day.settled).map((day) => day.name);
  const legend = [
    ...series.map((one) => `<span class="key ${one.className}">${escapeHtml(one.label)}</span>`),
    ...(open.length > 0 ? ['<span class="key unsettled">lighter, dashed: not yet settled</span>'] : []),
  ].join(' ');
  const unsettledNote = open.length > 0 ? `; not yet settled: ${open.join(', ')}` : '';
  const description = series.map((one) => `${one.label}: ${one.values.reduce((sum, value) => sum + value, 0)} in all`).join('; ') + unsettledNote;
  return `<figure class="chart"><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${id}-t ${id}-d" xmlns="http://www.w3.org/2000/svg"><title id="${id}-t">${escapeHtml(title)}</title><desc id="${id}-d">${escapeHtml(description)}</desc>${parts.join('')}</svg><figcaption>${escapeHtml(title)} ${legend}</figcaption></figure>`;
}

function formatTick(value: number): string {
  if (value >= 1000) return `${(value / 1000).toFixed(value % 1000 === 0 ? 0 : 1)}k`;
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/**
 * The widget script the service serves. Compiled code serves what `npm run build` wrote to
 * dist/widget/; code run from source (tests, `npm run chat`, tsx) bundles the current widget
 * source with esbuild on first request, so an edit is never hidden by a stale build.
 */
import { readFile } from 'node:fs/promises';
import type { WidgetBundle } from './routes.js';

let cached: Promise<WidgetBundle> | undefined;

/** Compiled (dist/) code serves the bundle the build wrote; code run from its TypeScript source bundles the source. */
const runningFromSource = import.meta.url.endsWith('.ts');

async function load(): Promise<WidgetBundle> {
  if (!runningFromSource) {
    // version.txt: the bundle's version, then each part's file name, a line each.
    const [code, lines] = await Promise.all([readFile('dist/widget/widget.js', 'utf8'), readFile('dist/widget/version.txt', 'utf8')]);
    const [version = '', ...files] = lines.split('\n').filter(Boolean);
    const parts = Object.fromEntries(await Promise.all(files.map(async (file) => [file, await readFile(`dist/widget/${file}`, 'utf8')] as const)));
    return { code, version, parts };
  }
  const builder = (await import(['..', '..', 'scripts', 'build-widget.js'].join('/'))) as { buildWidget(): Promise<WidgetBundle> };
  return builder.buildWidget();
}

export function widgetBundle(): Promise<WidgetBundle> {
  cached ??= load().catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return cached;
}

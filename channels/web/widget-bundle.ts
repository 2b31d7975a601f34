/**
 * The widget script the service serves. Production builds it once (`npm run build` writes
 * dist/widget/); in development and tests, where that file is absent, it is bundled on first
 * request with esbuild and kept in memory.
 */
import { readFile } from 'node:fs/promises';
import type { WidgetBundle } from './routes.js';

let cached: Promise<WidgetBundle> | undefined;

async function load(): Promise<WidgetBundle> {
  try {
    const [code, version] = await Promise.all([readFile('dist/widget/widget.js', 'utf8'), readFile('dist/widget/version.txt', 'utf8')]);
    return { code, version: version.trim() };
  } catch {
    const builder = (await import(['..', '..', 'scripts', 'build-widget.js'].join('/'))) as { buildWidget(): Promise<WidgetBundle> };
    return builder.buildWidget();
  }
}

export function widgetBundle(): Promise<WidgetBundle> {
  cached ??= load().catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return cached;
}

/**
 * Bundles the browser widget (channels/web/widget/index.ts) into one minified ES2020 IIFE with
 * no imports, and names it by a short content hash so the server can serve it under
 * `/widget/<version>/widget.js` with immutable caching. Run directly, it writes
 * dist/widget/widget.js and dist/widget/version.txt.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const entryPoint = fileURLToPath(new URL('../channels/web/widget/index.ts', import.meta.url));
const outputDirectory = fileURLToPath(new URL('../dist/widget/', import.meta.url));

export interface WidgetBundle {
  code: string;
  /** First 12 hex digits of the bundle's SHA-256. */
  version: string;
}

export async function buildWidget(): Promise<WidgetBundle> {
  const result = await build({
    entryPoints: [entryPoint],
    tsconfig: fileURLToPath(new URL('../channels/web/widget/tsconfig.json', import.meta.url)),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    minify: true,
    // Host pages in any charset must read the bundle alike: escape non-ASCII (the Spanish strings).
    charset: 'ascii',
    legalComments: 'none',
    sourcemap: false,
    write: false,
    logLevel: 'silent',
  });
  const output = result.outputFiles[0];
  if (!output) throw new Error('esbuild produced no widget bundle');
  const code = output.text;
  return { code, version: createHash('sha256').update(code).digest('hex').slice(0, 12) };
}

/** Builds the bundle and writes dist/widget/widget.js and dist/widget/version.txt. */
export async function writeWidgetBundle(): Promise<WidgetBundle> {
  const bundle = await buildWidget();
  await mkdir(outputDirectory, { recursive: true });
  await writeFile(`${outputDirectory}widget.js`, bundle.code);
  await writeFile(`${outputDirectory}version.txt`, `${bundle.version}\n`);
  return bundle;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { code, version } = await writeWidgetBundle();
  const kilobytes = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
  process.stdout.write(`dist/widget/widget.js ${version}: ${kilobytes(Buffer.byteLength(code))} minified, ${kilobytes(gzipSync(code).length)} gzipped\n`);
}

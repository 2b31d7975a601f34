/**
 * Bundles the browser widget into minified ES2020 scripts with no static imports: `widget.js` (an IIFE)
 * (channels/web/widget/index.ts: what a first paint needs) and its lazily loaded chat part
 * (channels/web/widget/chat-part.ts, an ES module `chat-<hash>.js` it `import()`s, whose name widget.js carries, so
 * widget.js's short content hash versions both). The server serves widget.js under
 * `/widget/<version>/widget.js` and the part under `/widget/part/<file>`, both immutable. Run
 * directly, it writes dist/widget/widget.js, the part and dist/widget/version.txt (the part's
 * file name on its second line).
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const widgetSource = (file: string): string => fileURLToPath(new URL(`../channels/web/widget/${file}`, import.meta.url));
const outputDirectory = fileURLToPath(new URL('../dist/widget/', import.meta.url));

export interface WidgetBundle {
  code: string;
  /** First 12 hex digits of the bundle's SHA-256. */
  version: string;
  /** The lazily loaded parts by file name (`chat-<hash>.js`): their code. */
  parts: Record<string, string>;
}

const hashOf = (code: string): string => createHash('sha256').update(code).digest('hex').slice(0, 12);

async function bundle(file: string, format: 'iife' | 'esm', define: Record<string, string>): Promise<string> {
  const result = await build({
    entryPoints: [widgetSource(file)],
    tsconfig: widgetSource('tsconfig.json'),
    define,
    bundle: true,
    format,
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
  if (!output) throw new Error(`esbuild produced no bundle of ${file}`);
  return output.text;
}

export async function buildWidget(): Promise<WidgetBundle> {
  const chat = await bundle('chat-part.ts', 'esm', {});
  const chatFile = `chat-${hashOf(chat)}.js`;
  const code = await bundle('index.ts', 'iife', { WIDGET_CHAT_PART: JSON.stringify(chatFile) });
  return { code, version: hashOf(code), parts: { [chatFile]: chat } };
}

/** Builds the bundle and writes dist/widget/widget.js and dist/widget/version.txt. */
export async function writeWidgetBundle(): Promise<WidgetBundle> {
  const widget = await buildWidget();
  await mkdir(outputDirectory, { recursive: true });
  await writeFile(`${outputDirectory}widget.js`, widget.code);
  for (const [file, code] of Object.entries(widget.parts)) await writeFile(`${outputDirectory}${file}`, code);
  await writeFile(`${outputDirectory}version.txt`, `${widget.version}\n${Object.keys(widget.parts).join('\n')}\n`);
  return widget;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { code, version, parts } = await writeWidgetBundle();
  const kilobytes = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
  const sizes = (text: string): string => `${kilobytes(Buffer.byteLength(text))} minified, ${kilobytes(gzipSync(text).length)} gzipped`;
  process.stdout.write(`dist/widget/widget.js ${version}: ${sizes(code)}\n`);
  for (const [file, text] of Object.entries(parts)) process.stdout.write(`dist/widget/${file}: ${sizes(text)}\n`);
}

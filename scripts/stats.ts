/**
 * `npm run stats`: the code's figures against the limits the project holds (no function over 150
 * lines, no file over 400 in src/, channels/, roles/): the longest functions and the largest
 * files, the composition root's size, how many are over the limits, and — when `.ci/run` wrote
 * test-artifacts/jest-results.json — the test run's wall time and its slowest suites, and the
 * whole `.ci/run`'s wall time from test-artifacts/ci-run.json.
 * It reports, it never gates: the exit code is always 0.
 *
 *   node --import tsx scripts/stats.ts
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { z } from 'zod';

const root = fileURLToPath(new URL('..', import.meta.url));
const DIRECTORIES = ['src', 'channels', 'roles'];
const TOP = 10;
const MAX_FUNCTION_LINES = 150;
const MAX_FILE_LINES = 400;
const COMPOSITION_ROOT = 'src/composition-root.ts';
const JEST_RESULTS = 'test-artifacts/jest-results.json';
const CI_RUN = 'test-artifacts/ci-run.json';

interface Measure {
  lines: number;
  where: string;
}

/** The TypeScript files under the measured directories (tests and declarations aside), relative to the root. */
function sourceFiles(): string[] {
  return DIRECTORIES.flatMap((directory) => {
    const absolute = join(root, directory);
    if (!existsSync(absolute)) return [];
    return readdirSync(absolute, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts') && !name.endsWith('.test.ts') && !name.split(/[\\/]/).includes('node_modules'))
      .map((name) => relative(root, join(absolute, name)));
  }).sort();
}

/** Lines as `wc -l` counts them. */
const lineCount = (text: string): number => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

const isFunction = (node: ts.Node): node is ts.FunctionLikeDeclaration =>
  ts.isFunctionDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isMethodDeclaration(node);

/** A function's name: its own, else the variable or property it is assigned to. */
function functionName(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return '(anonymous)';
}

/** Every function's length in lines, nested ones included (as /tmp/fnlen.mjs measured them). */
function functionLengths(file: string, text: string): Measure[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Measure[] = [];
  const visit = (node: ts.Node) => {
    if (isFunction(node)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ lines: last - first + 1, where: `${file}:${first + 1} ${functionName(node)}` });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const out: string[] = [];
const table = (title: string, rows: Measure[]) => {
  out.push(title);
  for (const row of rows) out.push(`  ${String(row.lines).padStart(5)}  ${row.where}`);
  out.push('');
};
const longestFirst = (a: Measure, b: Measure) => b.lines - a.lines || a.where.localeCompare(b.where);

function codeFigures(): void {
  const files: Measure[] = [];
  const functions: Measure[] = [];
  for (const file of sourceFiles()) {
    const text = readFileSync(join(root, file), 'utf8');
    files.push({ lines: lineCount(text), where: file });
    functions.push(...functionLengths(file, text));
  }
  files.sort(longestFirst);
  functions.sort(longestFirst);

  table(`Longest functions (${DIRECTORIES.map((directory) => `${directory}/`).join(', ')}; limit ${MAX_FUNCTION_LINES} lines)`, functions.slice(0, TOP));
  table(`Largest files (limit ${MAX_FILE_LINES} lines)`, files.slice(0, TOP));
  const compositionRoot = files.find((file) => file.where === COMPOSITION_ROOT);
  out.push(`Composition root: ${COMPOSITION_ROOT} ${compositionRoot ? `${compositionRoot.lines} lines` : 'not found'}`);
  out.push(
    `Over the limits: ${files.filter((file) => file.lines > MAX_FILE_LINES).length} files over ${MAX_FILE_LINES} lines, ` +
      `${functions.filter((fn) => fn.lines > MAX_FUNCTION_LINES).length} functions over ${MAX_FUNCTION_LINES} lines ` +
      `(${files.length} files, ${functions.length} functions measured)`,
  );
  out.push('');
}

/** The parts of Jest's `--json` report this reads. */
const JestResultsSchema = z.object({
  startTime: z.number(),
  testResults: z.array(z.looseObject({ name: z.string(), startTime: z.number().optional(), endTime: z.number().optional() })),
});

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function jestFigures(): void {
  const path = join(root, JEST_RESULTS);
  if (!existsSync(path)) {
    out.push(`Jest: no ${JEST_RESULTS} (written by .ci/run)`);
    return;
  }
  let parsed;
  try {
    parsed = JestResultsSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  } catch (error) {
    out.push(`Jest: ${JEST_RESULTS} is not JSON (${error instanceof Error ? error.message : String(error)})`);
    return;
  }
  if (!parsed.success) {
    out.push(`Jest: ${JEST_RESULTS} is not a Jest --json report (${parsed.error.issues[0]?.message ?? 'unexpected shape'})`);
    return;
  }
  const { startTime, testResults } = parsed.data;
  const suites = testResults.map((suite) => ({
    ms: suite.startTime !== undefined && suite.endTime !== undefined ? suite.endTime - suite.startTime : 0,
    end: suite.endTime ?? startTime,
    name: relative(root, suite.name),
  }));
  const wall = Math.max(startTime, ...suites.map((suite) => suite.end)) - startTime;
  const busy = suites.reduce((sum, suite) => sum + suite.ms, 0);
  out.push(`Jest (${JEST_RESULTS}): wall time ${seconds(wall)}, ${suites.length} suites, ${seconds(busy)} of suite time`);
  out.push(`Slowest suites:`);
  for (const suite of suites.sort((a, b) => b.ms - a.ms).slice(0, TOP)) out.push(`  ${seconds(suite.ms).padStart(9)}  ${suite.name}`);
}

const CiRunSchema = z.object({ startedAt: z.number(), endedAt: z.number() });

/** The last `.ci/run`'s wall time (install, checks and tests), which it writes at its end. */
function ciRunFigure(): void {
  const path = join(root, CI_RUN);
  if (!existsSync(path)) return void out.push(`.ci/run: no ${CI_RUN} (written at its end)`);
  const parsed = CiRunSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) return void out.push(`.ci/run: ${CI_RUN} is not {startedAt, endedAt}`);
  out.push(`.ci/run (${CI_RUN}): wall time ${seconds(parsed.data.endedAt - parsed.data.startedAt)}`);
}

// A report, never a gate: whatever fails is said, and the exit code stays 0.
try {
  codeFigures();
  jestFigures();
  ciRunFigure();
} catch (error) {
  out.push(`stats: ${error instanceof Error ? error.message : String(error)}`);
}
process.stdout.write(`${out.join('\n')}\n`);
process.exitCode = 0;

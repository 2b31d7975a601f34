// The layer rules of eslint.config.js and .dependency-cruiser.js, attacked: each forbidden edge
// of AGENTS.md "Do not" is written into a file where it doesn't belong and must be refused by
// the rule that names it; the allowed edges next to it must pass, so a rule can't be widened
// into uselessness or narrowed into silence without a test failing.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, test } from '@jest/globals';

const root = process.cwd();

interface LintCase {
  file: string;
  code: string;
}

/** Lints each snippet as if it were `file`, in one child process (ESLint loads the config once). */
function lint(cases: readonly LintCase[]): string[][] {
  const script = `
    import { ESLint } from 'eslint';
    const eslint = new ESLint({ cwd: process.cwd() });
    const out = [];
    for (const { file, code } of JSON.parse(process.argv[1])) {
      const [result] = await eslint.lintText(code, { filePath: file });
      out.push(result.messages.map((message) => message.ruleId ?? message.message));
    }
    process.stdout.write(JSON.stringify(out));
  `;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(cases)], { cwd: root, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`eslint run failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as string[][];
}

const RESTRICTED = ['no-restricted-imports'];

const lintCases: readonly (LintCase & { expected: string[] })[] = [
  // The orchestrator and the rest of core name no channel or role, not even by type or re-export.
  { file: 'src/orchestrator/x.ts', code: "import '../../channels/web/index.js';\n", expected: RESTRICTED },
  {
    file: 'src/orchestrator/state/x.ts',
    code: "import type { roster } from '../../../roles/index.js';\nexport type R = typeof roster;\n",
    expected: RESTRICTED,
  },
  { file: 'src/queue/x.ts', code: "export * from '../../channels/whatsapp/index.js';\n", expected: RESTRICTED },
  { file: 'src/orchestrator/x.ts', code: "import '../composition-root.js';\n", expected: RESTRICTED },
  { file: 'src/orchestrator/x.ts', code: "import '../../src/contracts/tool.js';\nimport './contracts.js';\n", expected: [] },
  // The composition root wires them; src/chat.ts only the CLI channel.
  { file: 'src/composition-root.ts', code: "import '../channels/whatsapp/index.js';\nimport '../roles/index.js';\n", expected: [] },
  { file: 'src/chat.ts', code: "import '../channels/cli/index.js';\nimport './composition-root.js';\n", expected: [] },
  { file: 'src/chat.ts', code: "import '../channels/web/index.js';\n", expected: RESTRICTED },
  { file: 'src/chat.ts', code: "import '../roles/index.js';\n", expected: RESTRICTED },
  // Channels and roles don't import each other; they may import core.
  { file: 'channels/web/x.ts', code: "import '../whatsapp/index.js';\n", expected: RESTRICTED },
  { file: 'channels/cli/x.ts', code: "import '../../roles/sales.js';\n", expected: RESTRICTED },
  { file: 'channels/whatsapp/x.ts', code: "import '../../src/contracts/index.js';\n", expected: [] },
  { file: 'roles/sales.ts', code: "import './support.js';\n", expected: RESTRICTED },
  { file: 'roles/sales.ts', code: "import '../channels/web/index.js';\n", expected: RESTRICTED },
  { file: 'roles/index.ts', code: "import './support.js';\nimport '../src/orchestrator/define-role.js';\n", expected: [] },
  // The browser widget imports nothing from the server and no package.
  { file: 'channels/web/widget/x.ts', code: "import '../routes.js';\n", expected: RESTRICTED },
  { file: 'channels/web/widget/x.ts', code: "import 'zod';\n", expected: RESTRICTED },
  { file: 'channels/web/widget/x.ts', code: "import './dom.js';\n", expected: [] },
  // Tests may import anything.
  { file: 'test/x.test.ts', code: "import '../channels/web/index.js';\nimport '../roles/index.js';\nimport '../src/composition-root.js';\n", expected: [] },
  // No shadowed globals; in the widget, window's legacy names may be locals but not read as globals.
  { file: 'src/x.ts', code: 'const process = 1;\nexport { process };\n', expected: ['@typescript-eslint/no-shadow'] },
  { file: 'channels/web/x.ts', code: 'export function f(URL: string): string {\n  return URL;\n}\n', expected: ['@typescript-eslint/no-shadow'] },
  { file: 'channels/web/widget/x.ts', code: 'export const f = (): unknown => event;\n', expected: ['no-restricted-globals'] },
  { file: 'channels/web/widget/x.ts', code: 'export const f = (event: Event): Event => event;\n', expected: [] },
  // Log through the logger: the console only in tests and the widget's developer console.
  { file: 'src/orchestrator/x.ts', code: "console.log('turn');\n", expected: ['no-console'] },
  { file: 'test/x.test.ts', code: "console.log('turn');\n", expected: [] },
];

describe('ESLint layer rules', () => {
  test('each forbidden import is refused, each allowed one passes', () => {
    const results = lint(lintCases);
    const report = lintCases.map((lintCase, index) => ({ file: lintCase.file, code: lintCase.code, rules: results[index] }));
    expect(report).toEqual(lintCases.map(({ file, code, expected }) => ({ file, code, rules: expected })));
  });
});

describe('dependency-cruiser rules', () => {
  test('a dynamic import of a channel from core, a module cycle and a directory cycle each fail the check', () => {
    const directory = mkdtempSync(join(tmpdir(), 'wa-depcruise-'));
    try {
      const files: Record<string, string> = {
        'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' } }),
        'src/orchestrator/load.ts': "export const load = () => import('../../channels/cli/index.js');\n",
        'channels/cli/index.ts': 'export const cli = 1;\n',
        'src/tools/x.ts': "import { y } from './y.js';\nexport const x = () => y;\n",
        'src/tools/y.ts': "import { x } from './x.js';\nexport const y = () => x;\n",
        'src/store/a.ts': "import { b } from '../handoff/b.js';\nexport const a = () => b;\n",
        'src/handoff/b.ts': "import { c } from '../store/c.js';\nexport const b = () => c;\n",
        'src/store/c.ts': 'export const c = 1;\n',
      };
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(directory, path)), { recursive: true });
        writeFileSync(join(directory, path), text);
      }
      const result = spawnSync(
        process.execPath,
        [
          join(root, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs'),
          'src',
          'channels',
          '--config',
          join(root, '.dependency-cruiser.js'),
          '--output-type',
          'json',
        ],
        { cwd: directory, encoding: 'utf8' },
      );
      if (!result.stdout) throw new Error(`dependency-cruiser wrote nothing: ${result.stderr}`);
      const { summary } = JSON.parse(result.stdout) as { summary: { violations: { rule: { name: string; severity: string }; from: string; to: string }[] } };
      const violations = summary.violations.map((violation) => `${violation.rule.severity} ${violation.rule.name}: ${violation.from} → ${violation.to}`).sort();
      expect(violations).toEqual([
        'error core-names-no-channel-or-role: src/orchestrator/load.ts → channels/cli/index.ts',
        'error no-circular-folders: src/handoff → src/store',
        'error no-circular-folders: src/store → src/handoff',
        'error no-circular: src/tools/x.ts → src/tools/y.ts',
      ]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

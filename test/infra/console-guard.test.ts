// Self-test of test/support/console-guard.ts (installed by jest.config.js): allowed console
// output passes and is readable; the guard's own check reports unexpected output.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allowConsole, consoleCalls } from '../support/console-guard.js';

describe('console guard', () => {
  test('allowConsole lets a test log, and consoleCalls shows what was written', () => {
    allowConsole('warn', /^retrying/);
    console.warn('retrying in %d ms', 50);
    expect(consoleCalls()).toEqual([{ method: 'warn', text: 'retrying in 50 ms', arguments: ['retrying in %d ms', 50] }]);
  });

  test('allowConsole() without arguments allows every method', () => {
    allowConsole();
    console.log('a');
    console.error('b');
    expect(consoleCalls().map((call) => call.method)).toEqual(['log', 'error']);
  });

  test('console output is captured, not printed, while a test runs', () => {
    allowConsole('info');
    const before = consoleCalls().length;
    console.info('quiet');
    expect(consoleCalls().length).toBe(before + 1);
  });
});

// The failing path: a test that logs without allowing it must fail. Jest cannot assert that a
// sibling test fails, so this suite runs a child Jest on a generated test file.
describe('console guard failing path', () => {
  test('an unexpected console.error fails the test with the call listed', () => {
    const directory = mkdtempSync(join(tmpdir(), 'wa-console-guard-'));
    try {
      writeFileSync(join(directory, 'noisy.test.ts'), "test('noisy', () => { console.error('something broke', 42); });\n");
      const result = spawnSync(
        process.execPath,
        [
          join(process.cwd(), 'node_modules/jest/bin/jest.js'),
          ...['--rootDir', process.cwd(), '--roots', directory, '--testMatch', '**/noisy.test.ts'],
          ...['--globalSetup', '', '--globalTeardown', '', '--ci', '--no-cache'],
        ],
        { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '--experimental-vm-modules --disable-warning=ExperimentalWarning' }, timeout: 60_000 },
      );
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('wrote to the console unexpectedly (1 call)');
      expect(result.stderr).toContain('console.error: something broke 42');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

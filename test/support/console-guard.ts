// Jest setupFilesAfterEnv: fails any test that writes to console.log/info/warn/error/debug
// without saying it expects to. Calls are recorded (not printed) during each test and listed
// in the failure raised from afterEach. A test that means to log calls allowConsole(); a test
// that asserts on its logging reads consoleCalls().
import { format } from 'node:util';

export type ConsoleMethod = 'log' | 'info' | 'warn' | 'error' | 'debug';

export interface ConsoleCall {
  method: ConsoleMethod;
  text: string;
  arguments: unknown[];
}

interface ConsoleAllowance {
  methods: ReadonlySet<ConsoleMethod>;
  pattern: RegExp | undefined;
}

interface ConsoleGuardState {
  calls: ConsoleCall[];
  allowances: ConsoleAllowance[];
  originals: Map<ConsoleMethod, (...data: unknown[]) => void>;
}

const guardedMethods: readonly ConsoleMethod[] = ['log', 'info', 'warn', 'error', 'debug'];

// The state lives on the test file's global so this module's exports work whether a test
// imports the same module instance as the setup file or a fresh one.
const stateKey = Symbol.for('wa-assistant.console-guard');
type GlobalWithGuard = typeof globalThis & { [stateKey]?: ConsoleGuardState };

function guardState(): ConsoleGuardState {
  const scope = globalThis as GlobalWithGuard;
  scope[stateKey] ??= { calls: [], allowances: [], originals: new Map() };
  return scope[stateKey];
}

/**
 * Lets the current test write to the console: all methods when called bare, or only the
 * given methods, optionally only for output matching `pattern`. Resets after each test.
 */
export function allowConsole(methods: ConsoleMethod | readonly ConsoleMethod[] = guardedMethods, pattern?: RegExp): void {
  const list: readonly ConsoleMethod[] = typeof methods === 'string' ? [methods] : methods;
  guardState().allowances.push({ methods: new Set(list), pattern });
}

/** Every console call the current test made so far, allowed or not. */
export function consoleCalls(): readonly ConsoleCall[] {
  return guardState().calls;
}

function isAllowed(call: ConsoleCall, allowances: readonly ConsoleAllowance[]): boolean {
  return allowances.some((allowance) => allowance.methods.has(call.method) && (allowance.pattern?.test(call.text) ?? true));
}

function installGuard(): void {
  const state = guardState();
  state.calls = [];
  state.allowances = [];
  for (const method of guardedMethods) {
    if (!state.originals.has(method)) state.originals.set(method, console[method]);
    console[method] = (...data: unknown[]): void => {
      state.calls.push({ method, text: format(...data), arguments: data });
    };
  }
}

function removeGuard(): ConsoleCall[] {
  const state = guardState();
  for (const [method, original] of state.originals) console[method] = original;
  state.originals.clear();
  const unexpected = state.calls.filter((call) => !isAllowed(call, state.allowances));
  state.calls = [];
  state.allowances = [];
  return unexpected;
}

beforeEach(() => {
  installGuard();
});

afterEach(() => {
  const unexpected = removeGuard();
  if (unexpected.length === 0) return;
  const listing = unexpected.map((call) => `  console.${call.method}: ${call.text}`).join('\n');
  throw new Error(
    `This test wrote to the console unexpectedly (${unexpected.length} call${unexpected.length === 1 ? '' : 's'}):\n${listing}\n` +
      'Call allowConsole() from test/support/console-guard.js if the output is intended.',
  );
});

// ESLint (flat config) exists to hold the layering the code relies on but the compiler can't see:
// the orchestrator is generic (knows no channel or role), only the composition root wires
// concrete channels and roles, channels and roles don't reach into each other, and the browser
// widget ships nothing from the server. It also forbids shadowing a global (a local `URL`,
// `process` or `fetch` that hides the real one) and the console outside tests. Syntax-only: no
// type information, so a run stays a few seconds; `tsc` is the type gate. `npm run cycles`
// checks the same layers on resolved paths, dynamic imports included.
import js from '@eslint/js';
import confusingBrowserGlobals from 'confusing-browser-globals';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** One `no-restricted-imports` entry per forbidden edge; later config blocks replace, not merge. */
const restrict = (...patterns) => ['error', { patterns }];

const NO_CHANNELS_OR_ROLES = {
  regex: '^(\\.\\./)+(channels|roles)(/|$)',
  message: 'Only src/composition-root.ts names concrete channels and roles (src/chat.ts the CLI channel): add a contract field or a hook instead.',
};

const NO_WIRING = {
  regex: '^(\\./|(\\.\\./)+)(src/)?(composition-root|main|chat)\\.js$',
  message: 'Only the entry points (src/main.ts, src/chat.ts) and tests import the wiring modules.',
};

const otherChannels = (self) => ({
  regex: `^(\\.\\./)+(${['cli', 'web', 'whatsapp'].filter((name) => name !== self).join('|')})(/|$)`,
  message: 'A channel does not import another channel: share through src/ or the composition root.',
});

const NO_ROLES_FROM_CHANNELS = {
  regex: '^(\\.\\./)+roles(/|$)',
  message: 'A channel does not import a role.',
};

export default defineConfig(
  {
    ignores: ['node_modules/', 'dist/', 'coverage/', 'test-artifacts/', '.data/'],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.js'],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    rules: {
      // Shadowing a global: a local `URL`, `fetch` or `process` hides the real one.
      'no-shadow': 'off',
      '@typescript-eslint/no-shadow': [
        'error',
        {
          builtinGlobals: true,
          ignoreTypeValueShadow: true,
          ignoreFunctionTypeParameterNameValueShadow: true,
          // express's request/response types, imported type-only: a value use fails `tsc`.
          allow: ['Request', 'Response'],
        },
      ],
      'no-shadow-restricted-names': 'error',
      // `tsc` (noUnusedLocals/Parameters) already reports these, with the project's `_` convention.
      '@typescript-eslint/no-unused-vars': 'off',
    },
  },
  {
    // AGENTS.md: log through the logger, never the console (tests fail on console output).
    files: ['src/**/*.ts', 'channels/**/*.ts', 'roles/**/*.ts', 'scripts/**/*.ts'],
    // The widget's one way to tell the embedding site's developer: the browser console.
    ignores: ['channels/web/widget/developer-console.ts'],
    rules: { 'no-console': 'error' },
  },
  {
    // The browser widget runs on the DOM. `window`'s legacy properties (`event`, `name`, `status`,
    // `open`, `history`, …) are no globals here: a local may take the name, and reading the
    // global by accident (a handler that forgot its `event` parameter) is an error instead.
    files: ['channels/web/widget/**/*.ts'],
    languageOptions: {
      globals: Object.fromEntries(Object.entries(globals.browser).filter(([name]) => !confusingBrowserGlobals.includes(name))),
    },
    rules: {
      'no-restricted-globals': [
        'error',
        ...confusingBrowserGlobals.map((name) => ({ name, message: `Use a local, or window.${name} if the global is meant.` })),
      ],
    },
  },
  {
    // Layer rules. A file matches exactly one of the blocks below, so its patterns are complete.
    files: ['src/**/*.ts'],
    ignores: ['src/composition-root.ts', 'src/chat.ts', 'src/main.ts'],
    rules: { 'no-restricted-imports': restrict(NO_CHANNELS_OR_ROLES, NO_WIRING) },
  },
  {
    files: ['src/main.ts'],
    rules: { 'no-restricted-imports': restrict(NO_CHANNELS_OR_ROLES) },
  },
  {
    files: ['src/chat.ts'],
    rules: {
      'no-restricted-imports': restrict({
        regex: '^\\.\\./(roles|channels/(?!cli/))',
        message: 'src/chat.ts wires only the CLI channel; everything else comes from the composition root.',
      }),
    },
  },
  {
    files: ['channels/whatsapp/**/*.ts'],
    rules: { 'no-restricted-imports': restrict(otherChannels('whatsapp'), NO_ROLES_FROM_CHANNELS, NO_WIRING) },
  },
  {
    files: ['channels/cli/**/*.ts'],
    rules: { 'no-restricted-imports': restrict(otherChannels('cli'), NO_ROLES_FROM_CHANNELS, NO_WIRING) },
  },
  {
    files: ['channels/web/**/*.ts'],
    ignores: ['channels/web/widget/**'],
    rules: { 'no-restricted-imports': restrict(otherChannels('web'), NO_ROLES_FROM_CHANNELS, NO_WIRING) },
  },
  {
    files: ['channels/web/widget/**/*.ts'],
    rules: {
      'no-restricted-imports': restrict(
        {
          regex: '^\\.\\.(/|$)',
          message: 'The browser widget imports nothing outside channels/web/widget/ (no server code in the bundle).',
        },
        { regex: '^[^.]', message: 'The browser widget has no dependencies: everything it ships is in this folder.' },
      ),
    },
  },
  {
    files: ['roles/**/*.ts'],
    ignores: ['roles/index.ts'],
    rules: {
      'no-restricted-imports': restrict(
        { regex: '^\\./', message: 'A role does not import another role: shared code belongs in src/.' },
        { regex: '^(\\.\\./)+channels(/|$)', message: 'A role does not import a channel.' },
        NO_WIRING,
      ),
    },
  },
  {
    files: ['roles/index.ts'],
    rules: {
      'no-restricted-imports': restrict({ regex: '^(\\.\\./)+channels(/|$)', message: 'A role does not import a channel.' }, NO_WIRING),
    },
  },
);

// dependency-cruiser (`npm run cycles`) exists to keep imports going one way: no module-level
// import cycle, no cycle between directories, and the layer rules of eslint.config.js checked
// again on resolved paths (so a dynamic `import()` or a re-export can't slip past them).
// Type-only imports count: a cycle through types still ties the layers together.
// The wiring modules (src/composition-root.ts, src/main.ts, src/chat.ts) are left out of the
// graph: they import every directory by design, so with them `src/` would sit in a cycle with
// each one. Nothing else may import them (eslint.config.js), so no cycle can run through them,
// and ESLint checks what they import.
// Module-level violations that exist today are listed in .dependency-cruiser-known-violations.json
// (`npm run cycles` ignores exactly those); regenerate it as they go (see AGENTS.md "Commands").

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A module cycle: order of evaluation decides what is undefined at import time.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    // Directory cycles: none (the contracts live in src/contracts/, each layer owns its keys).
    {
      name: 'no-circular-folders',
      comment: 'Two directories that import each other are one layer: move the shared piece down.',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'contracts-import-no-layer',
      comment: 'src/contracts/ is the bottom layer: every other layer imports it, it imports none of them.',
      severity: 'error',
      from: { path: '^src/contracts/' },
      to: { path: '^(src/(orchestrator|queue|tools|turn|handoff|takeover|store|channel-plugin)|channels/|roles/)' },
    },
    {
      name: 'queue-and-tools-below-orchestrator',
      comment: 'The worker and the tools see the turn through contracts, not the orchestrator.',
      severity: 'error',
      from: { path: '^src/(queue|tools)/' },
      to: { path: '^src/orchestrator/' },
    },
    {
      name: 'orchestrator-owns-its-keys',
      comment: 'Each layer owns its Redis keys: the orchestrator does not reach into src/queue/.',
      severity: 'error',
      from: { path: '^src/orchestrator/' },
      to: { path: '^src/queue/' },
    },
    {
      name: 'handoff-knows-no-takeover',
      comment: 'Takeover is built on hand-offs (their records, teams, notices), never the other way round.',
      severity: 'error',
      from: { path: '^src/handoff/' },
      to: { path: '^src/takeover/' },
    },
    {
      name: 'takeover-below-the-turn',
      comment:
        'Takeover reaches a conversation through its inbox entries and the transcript store: the turn, the worker, the orchestrator, actions and the surfaces (admin, transcript page) call it, it calls none of them.',
      severity: 'error',
      from: { path: '^src/takeover/' },
      to: { path: '^src/(orchestrator|queue|turn|tools|actions|admin|transcripts|contacts|http)/' },
    },
    {
      name: 'core-names-no-channel-or-role',
      comment: 'Only src/composition-root.ts names concrete channels and roles (src/chat.ts the CLI channel).',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(channels|roles)/' },
    },
    {
      name: 'channels-are-independent',
      comment: 'A channel imports neither another channel nor a role.',
      severity: 'error',
      from: { path: '^channels/([^/]+)/' },
      to: { path: '^(channels/|roles/)', pathNot: '^channels/$1/' },
    },
    {
      name: 'roles-are-independent',
      comment: 'A role imports neither another role nor a channel; roles/index.ts lists them.',
      severity: 'error',
      from: { path: '^roles/', pathNot: '^roles/index\\.ts$' },
      to: { path: '^(roles/|channels/)' },
    },
    {
      name: 'widget-is-self-contained',
      comment: 'The browser widget ships nothing from the server and has no dependencies.',
      severity: 'error',
      from: { path: '^channels/web/widget/' },
      to: { pathNot: '^channels/web/widget/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^(node_modules|dist|coverage)/', '^src/(composition-root|main|chat)\\.ts$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};

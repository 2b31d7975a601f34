/**
 * `npm run bench:budget`: what one turn costs the orchestrator on real Redis — model calls
 * before the reply, tools offered, Redis commands on orchestrator state (before the judge,
 * before the model, in all), MCP calls and prompt sizes — in steady state, on the degraded
 * paths, with 30 roles and 2,000 MCP tools, with 200 guidance entries defined, for a turn that proposes an action and for the leg
 * where the customer's Confirm tap runs it.
 */
import { roster } from '../../roles/index.js';
import { keywordJudge, type Script } from '../support/deterministic-model.js';
import { guidanceEntries, guidanceHook } from '../support/guidance-entries.js';
import { startRedis } from '../support/services.js';
import { generatedRoster, measureConfirmationLeg, measureProposingTurn, measureTurn, type TurnCost } from '../support/turn-budget.js';

const redis = await startRedis();
process.env.TEST_REDIS_URL = redis.url;

const failOnMeasuredTurn = (keep: (call: Parameters<Script>[0]) => boolean): Script => {
  let failing = false;
  return (call) => {
    if (JSON.stringify(call.options.prompt).includes('Business')) failing = true;
    return failing && !keep(call) ? { error: new Error('model endpoint down') } : keywordJudge(call);
  };
};

const rows: [string, TurnCost][] = [
  ['role switch + facts + tool (3 roles, 5 MCP reads)', await measureTurn({ roles: roster, extraReadTools: 0 })],
  ['30 roles, 2,005 MCP reads', await measureTurn({ roles: generatedRoster(30), extraReadTools: 2000 })],
  ['200 guidance entries defined (10 in scope)', await measureTurn({ roles: roster, extraReadTools: 0, guidance: guidanceHook(guidanceEntries(200)) })],
  [
    'judge fails → route fallback + fact fallback',
    await measureTurn({ roles: roster, extraReadTools: 0, judge: failOnMeasuredTurn((call) => !call.schema?.properties?.tier) }),
  ],
  [
    'judge and fallback fail → fail closed',
    await measureTurn({ roles: roster, extraReadTools: 0, judge: failOnMeasuredTurn((call) => Boolean(call.schema?.properties?.team_size)) }),
  ],
  ['bookkeeper proposes an action (a write called)', await measureProposingTurn()],
  ['customer taps Confirm: the action runs', await measureConfirmationLeg()],
];

console.log(
  '\nPer-turn orchestrator budget (the measured leg of each conversation; Redis commands on orchestrator state and actions, counted by MONITOR; MCP calls at the test server)',
);
console.log(
  ['path'.padEnd(46), 'model calls', 'before reply', 'offered', 'mcp calls', 'redis<judge', 'redis<model', 'redis total', 'judge prompt', 'reply system'].join(
    ' | ',
  ),
);
for (const [name, cost] of rows) {
  console.log(
    [
      name.padEnd(46),
      String(cost.modelCalls).padStart(11),
      String(cost.modelCallsBeforeReply).padStart(12),
      String(cost.offered).padStart(7),
      String(cost.mcpCalls).padStart(9),
      (cost.judged ? String(cost.beforeJudge.length) : '—').padStart(11),
      String(cost.beforeModel.length).padStart(11),
      String(cost.total.length).padStart(11),
      (cost.judged ? `${cost.judgePromptChars} ch` : '—').padStart(12),
      `${cost.replySystemChars} ch`.padStart(12),
    ].join(' | '),
  );
  console.log(`${''.padEnd(46)}   commands: ${cost.total.join(' ')}`);
}
await redis.stop();
process.exit(0);

/**
 * `npm run simulate -- <scenarios.json> [--against draft|published]`: runs the scenarios of a
 * JSON file (`[{ "name", "persona", "criteria": [...], "channel"?, "site"?, "language"?,
 * "contact"?, "maxTurns"? }]`, or `{ "scenarios": [...] }`) against the draft (default) or the
 * live guidance, with the service's configuration and models, the same way
 * `POST /admin/simulations/run` does; prints each scenario's conversation and verdicts. See
 * docs/guidance.md.
 *
 * Exits 0 when every scenario passed, 1 when one failed (or the input is refused), 2 on a usage
 * error.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { roster } from '../roles/index.js';
import { WEB_CHANNEL_ID } from '../channels/web/index.js';
import { WHATSAPP_CHANNEL_ID } from '../channels/whatsapp/webhook.js';
import { loadConfig } from '../src/config.js';
import { errorText } from '../src/errors/index.js';
import { formatIssues } from '../src/errors/issues.js';
import { createGuidanceFeature } from '../src/guidance/feature.js';
import { ScenarioSchema } from '../src/guidance/simulation-model.js';
import { createLogger } from '../src/logger.js';
import { createMetrics } from '../src/metrics.js';
import { createRedis } from '../src/redis.js';
import { connectMongo } from '../src/store/transcript-store.js';

const USAGE = 'usage: npm run simulate -- <scenarios.json> [--against draft|published]\n';
const FileSchema = z.union([
  z.array(ScenarioSchema).min(1).max(10),
  z.strictObject({ scenarios: z.array(ScenarioSchema).min(1).max(10) }).transform((file) => file.scenarios),
]);

async function scenariosIn(path: string) {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read ${path}: ${errorText(error)}`, { cause: error });
  }
  const parsed = FileSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`invalid scenarios: ${formatIssues(parsed.error.issues, 'scenarios')}`);
  return parsed.data;
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { against: { type: 'string', default: 'draft' } } });
  } catch (error) {
    process.stderr.write(`${errorText(error)}\n${USAGE}`);
    return 2;
  }
  const [file] = parsed.positionals;
  const against = parsed.values.against;
  if (!file || parsed.positionals.length > 1 || (against !== 'draft' && against !== 'published')) {
    process.stderr.write(USAGE);
    return 2;
  }
  let scenarios;
  try {
    scenarios = await scenariosIn(file);
  } catch (error) {
    process.stderr.write(`${errorText(error)}\n`);
    return 1;
  }
  const config = loadConfig();
  const logger = createLogger({ level: 'warn', sink: (line) => process.stderr.write(`${line}\n`) });
  const redis = createRedis(config);
  const mongo = await connectMongo(config.mongodbUri);
  const channels = new Map([WHATSAPP_CHANNEL_ID, WEB_CHANNEL_ID].map((id) => [id, { promptFragment: '' }]));
  const feature = createGuidanceFeature({ redis, mongo, logger, metrics: createMetrics() }, config, { roles: roster, channels: () => channels });
  try {
    const results = await feature.simulations(scenarios, against);
    for (const result of results) {
      const lines = [
        `${result.passed ? 'PASS' : 'FAIL'} ${result.scenario.name} (${against}${against === 'published' ? ` version ${result.version}` : ''})`,
        ...result.conversation.map((line) => `  ${line.from}: ${line.text.replace(/\s+/g, ' ')}`),
        ...result.verdicts.map((verdict) => `  ${verdict.passed ? '✓' : '✗'} ${verdict.criterion} — ${verdict.reason}`),
        ...(result.flipped.length ? [`  flipped since the last run: ${result.flipped.join('; ')}`] : []),
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    }
    return results.every((result) => result.passed) ? 0 : 1;
  } catch (error) {
    logger.error('simulate-failed', { error });
    process.stderr.write(`failed: ${errorText(error)}\n`);
    return 1;
  } finally {
    await feature.close();
    await mongo.close();
    redis.disconnect();
  }
}

process.exitCode = await main(process.argv.slice(2));

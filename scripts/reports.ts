/**
 * `npm run reports -- rebuild`: counts the daily report roll-ups again from what MongoDB holds
 * (messages, hand-offs, confirmed actions, model usage), with the service's configuration
 * (MONGODB_URI, REDIS_URL or REDIS_CLUSTER_NODES). See docs/reports.md. Exits 0 when done, 1 on
 * a failure (logged), 2 on an unknown command.
 *
 *   node --env-file-if-exists=.env --import tsx scripts/reports.ts rebuild
 */
import { loadConfig } from '../src/config.js';
import { parseTeams } from '../src/handoff/teams.js';
import { createLogger } from '../src/logger.js';
import { createMetrics } from '../src/metrics.js';
import { createRedis } from '../src/redis.js';
import { createReportsFeature } from '../src/reports/index.js';
import { connectMongo } from '../src/store/transcript-store.js';

const USAGE = 'usage: npm run reports -- rebuild\n';

async function main(command: string | undefined): Promise<number> {
  if (command !== 'rebuild') {
    process.stderr.write(USAGE);
    return 2;
  }
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel });
  const redis = createRedis(config);
  const connection = await connectMongo(config.mongodbUri);
  const teams = parseTeams(config.handoff.teamsJson);
  try {
    const reports = createReportsFeature({
      connection,
      redis,
      logger,
      metrics: createMetrics(),
      config: { adminToken: undefined, publicBaseUrl: config.publicBaseUrl, channels: [], prices: config.model.prices },
      // The teams' opening hours: the first reply within them is counted again too.
      teamHours: (team) => (team === 'sales' || team === 'support' ? teams[team]?.hours : undefined),
      // The days the live roll-up counts on (REPORTS_TIME_ZONE).
      timeZone: config.reports.timeZone,
    });
    const started = performance.now();
    const result = await reports.rebuild();
    process.stdout.write(
      `rebuilt ${result.days} days from ${result.messages} messages, ${result.handoffs} hand-offs, ${result.actions} actions, ${result.usage} usage totals in ${Math.round(performance.now() - started)} ms\n`,
    );
    return 0;
  } catch (error) {
    logger.error('reports-rebuild-failed', { error });
    return 1;
  } finally {
    await connection.close();
    redis.disconnect();
  }
}

process.exitCode = await main(process.argv[2]);

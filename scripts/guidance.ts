/**
 * `npm run guidance -- <command>`: the business's guidance from a terminal, with the service's
 * configuration (MONGODB_URI, REDIS_URL or REDIS_CLUSTER_NODES), through the same service
 * functions `/admin/guidance` calls — so every worker hears of a publish or a rollback through
 * the change stream within seconds. See docs/guidance.md.
 *
 *   list                                       the draft, the live version, every version, each process's live version
 *   add --category <c> --text <t> [--roles a,b] [--channels a,b] [--sites a,b] [--team sales|support]
 *       [--verified true|false] [--entities a,b] [--email-domains a,b]
 *                                              a draft entry
 *   remove <id>                                a draft entry
 *   publish                                    the draft as the next version (every place over budget when refused)
 *   rollback <version>                         a new version with that version's entries
 *
 * Exits 0 when done, 1 with one line on stderr when the input is refused or the work failed, 2
 * on a usage error.
 */
import { parseArgs } from 'node:util';
import { roster } from '../roles/index.js';
import { WEB_CHANNEL_ID } from '../channels/web/index.js';
import { WHATSAPP_CHANNEL_ID } from '../channels/whatsapp/webhook.js';
import { loadConfig } from '../src/config.js';
import { errorText } from '../src/errors/index.js';
import { formatIssues } from '../src/errors/issues.js';
import { createGuidanceFeature, type GuidanceFeature } from '../src/guidance/feature.js';
import { EntryInputSchema, type GuidanceEntry } from '../src/guidance/model.js';
import { GuidanceRefusal } from '../src/guidance/service.js';
import { createLogger } from '../src/logger.js';
import { createMetrics } from '../src/metrics.js';
import { createRedis } from '../src/redis.js';
import { connectMongo } from '../src/store/transcript-store.js';

const USAGE = `usage: npm run guidance -- list | publish | rollback <version> | remove <id>
       npm run guidance -- add --category style|clarification|escalation|policy --text <text> [--roles a,b] [--channels a,b]
                               [--sites a,b] [--team sales|support] [--verified true|false] [--entities a,b] [--email-domains a,b]
`;
const COMMANDS = ['list', 'add', 'remove', 'publish', 'rollback'];

/** A refusal of the input: one line on stderr, exit 1. */
class Refused extends Error {}

const listOf = (value: string | undefined) =>
  value
    ?.split(',')
    .map((item) => item.trim())
    .filter(Boolean);

type Values = Partial<Record<'category' | 'text' | 'roles' | 'channels' | 'sites' | 'team' | 'verified' | 'entities' | 'email-domains', string>>;

function entryInput(values: Values) {
  const audience = {
    ...(values.verified !== undefined ? { verified: values.verified === 'true' ? true : values.verified === 'false' ? false : values.verified } : {}),
    ...(values.entities ? { entities: listOf(values.entities) } : {}),
    ...(values['email-domains'] ? { emailDomains: listOf(values['email-domains']) } : {}),
  };
  const scope = {
    ...(values.roles ? { roles: listOf(values.roles) } : {}),
    ...(values.channels ? { channels: listOf(values.channels) } : {}),
    ...(values.sites ? { sites: listOf(values.sites) } : {}),
    ...(Object.keys(audience).length > 0 ? { audience } : {}),
  };
  const parsed = EntryInputSchema.safeParse({ category: values.category, text: values.text, scope, ...(values.team ? { team: values.team } : {}) });
  if (!parsed.success) throw new Refused(`invalid entry: ${formatIssues(parsed.error.issues, 'entry')}`);
  return parsed.data;
}

const scopeText = (entry: GuidanceEntry) => {
  const { roles, channels, sites, audience } = entry.scope;
  const parts = [roles && `roles ${roles.join(',')}`, channels && `channels ${channels.join(',')}`, sites && `sites ${sites.join(',')}`];
  if (audience) parts.push(`audience ${JSON.stringify(audience)}`);
  if (entry.team) parts.push(`team ${entry.team}`);
  return parts.filter(Boolean).join('; ') || 'everywhere';
};

async function run(feature: GuidanceFeature, command: string, args: string[], values: Values): Promise<void> {
  const { service } = feature;
  if (command === 'list') {
    const overview = await service.overview();
    const lines = [
      `live: ${overview.live ? `version ${overview.live.version} (${overview.live.entries.length} entries, published ${overview.live.publishedAt})` : 'nothing published'}${overview.unpublished ? '; the draft has unpublished changes' : ''}`,
      `draft (${overview.draft.length})`,
      ...overview.draft.map((entry) => `  ${entry.id}  ${entry.category}  [${scopeText(entry)}]  ${entry.text.replace(/\s+/g, ' ').slice(0, 100)}`),
      `versions: ${overview.versions.join(', ') || 'none'}`,
      `workers: ${overview.workers.map((worker) => `${worker.process} v${worker.version}`).join(', ') || 'none reporting'}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    return;
  }
  if (command === 'add') {
    const entry = await service.create(entryInput(values));
    process.stdout.write(`added ${entry.id} to the draft (publish to make it live)\n`);
    return;
  }
  if (command === 'publish') {
    const version = await service.publish();
    process.stdout.write(`published version ${version.version} (${version.entries.length} entries)\n`);
    return;
  }
  const [target] = args;
  if (!target) throw new Refused(`${command} needs an argument`);
  if (command === 'remove') {
    await service.remove(target);
    process.stdout.write(`removed ${target} from the draft\n`);
    return;
  }
  const number = Number(target);
  if (!Number.isInteger(number) || number < 1) throw new Refused(`not a version number: ${target}`);
  const version = await service.rollback(number);
  process.stdout.write(`published version ${version.version} with version ${number}'s ${version.entries.length} entries\n`);
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    const text = { type: 'string' } as const;
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { category: text, text, roles: text, channels: text, sites: text, team: text, verified: text, entities: text, 'email-domains': text },
    });
  } catch (error) {
    process.stderr.write(`${errorText(error)}\n${USAGE}`);
    return 2;
  }
  const [command, ...args] = parsed.positionals;
  if (!command || !COMMANDS.includes(command)) {
    process.stderr.write(USAGE);
    return 2;
  }
  const config = loadConfig();
  const logger = createLogger({ level: 'warn', sink: (line) => process.stderr.write(`${line}\n`) });
  const redis = createRedis(config);
  const mongo = await connectMongo(config.mongodbUri);
  const channels = new Map([WHATSAPP_CHANNEL_ID, WEB_CHANNEL_ID, 'cli'].map((id) => [id, { promptFragment: '' }]));
  const feature = createGuidanceFeature({ redis, mongo, logger, metrics: createMetrics() }, config, { roles: roster, channels: () => channels });
  try {
    await run(feature, command, args, parsed.values);
    return 0;
  } catch (error) {
    if (error instanceof GuidanceRefusal) {
      const problems = (error.details.problems as unknown[] | undefined) ?? [];
      process.stderr.write(`${error.message}\n${problems.map((problem) => `  ${JSON.stringify(problem)}\n`).join('')}`);
      return 1;
    }
    if (!(error instanceof Refused)) logger.error('guidance-command-failed', { command, error });
    process.stderr.write(`${error instanceof Refused ? error.message : `failed: ${errorText(error)}`}\n`);
    return 1;
  } finally {
    await feature.close();
    await mongo.close();
    redis.disconnect();
  }
}

process.exitCode = await main(process.argv.slice(2));

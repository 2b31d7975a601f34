/**
 * What an owner does with guidance, whichever way they come (`/admin/guidance`, the page,
 * `npm run guidance`): edit the draft (create, edit, delete), publish it as the next version
 * (refused, with every place an entry would not fit, when the set is over a budget), roll back to
 * any published version (a new version with its entries: versions are never rewritten), and see
 * the draft, the live version, every version and each process's live version. A refusal is a
 * `GuidanceRefusal` carrying its HTTP status and reason.
 */
import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis.js';
import { announcePublish, type LiveGuidance, type WorkerStatus } from './live.js';
import type { EntryInput, GuidanceEntry, PublishedVersion } from './model.js';
import { budgetProblems, type BudgetProblem } from './scope.js';
import type { GuidanceStore } from './store.js';

/** At most this many entries in a set. */
const MAX_ENTRIES = 250;
/** A publish refusal lists at most this many places. */
const MAX_PROBLEMS = 20;

export class GuidanceRefusal extends AppError {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface GuidanceOverview {
  draft: GuidanceEntry[];
  /** The draft differs from the live version (something to publish). */
  unpublished: boolean;
  live: { version: number; entries: GuidanceEntry[]; publishedAt: string } | undefined;
  versions: number[];
  workers: WorkerStatus[];
}

export interface GuidanceServiceOptions {
  store: GuidanceStore;
  live: LiveGuidance;
  redis: RedisClient;
  logger: Logger;
  budgets: { promptTokens: number; judgeTokens: number };
  /** The roster's role ids and the enabled channels' ids: an entry naming another is refused. */
  roles: () => readonly string[];
  channels: () => readonly string[];
  /** Runs before a publish writes its version (the simulations it requires); throws a `GuidanceRefusal` to refuse it. */
  beforePublish?: (entries: GuidanceEntry[]) => Promise<void>;
}

const sameSet = (a: readonly GuidanceEntry[], b: readonly GuidanceEntry[]) => {
  const key = (entries: readonly GuidanceEntry[]) => JSON.stringify([...entries].sort((x, y) => x.id.localeCompare(y.id)));
  return key(a) === key(b);
};

export function createGuidanceService(options: GuidanceServiceOptions) {
  const { store, live, redis, logger } = options;

  const checkNames = (input: EntryInput) => {
    const unknown = (named: readonly string[] | undefined, known: readonly string[], what: string) => {
      const missing = (named ?? []).filter((name) => !known.includes(name));
      if (missing.length > 0) throw new GuidanceRefusal(400, `unknown_${what}`, `unknown ${what}: ${missing.join(', ')} (known: ${known.join(', ')})`);
    };
    unknown(input.scope.roles, options.roles(), 'role');
    unknown(input.scope.channels, options.channels(), 'channel');
  };

  /** Writes the next version; a number another publisher took first is a 409. */
  const publishEntries = async (entries: GuidanceEntry[], restoredFrom?: number): Promise<PublishedVersion> => {
    const problems: BudgetProblem[] = budgetProblems(entries, options.roles(), options.budgets);
    if (problems.length > 0) {
      throw new GuidanceRefusal(422, 'over_budget', `${problems.length} place(s) where the entries would not fit their budget: shorten, scope or remove them`, {
        problems: problems.slice(0, MAX_PROBLEMS),
      });
    }
    const version: PublishedVersion = {
      version: ((await store.versionNumbers()).at(-1) ?? 0) + 1,
      entries,
      publishedAt: new Date().toISOString(),
      ...(restoredFrom !== undefined ? { restoredFrom } : {}),
    };
    if (!(await store.insertVersion(version))) throw new GuidanceRefusal(409, 'publish_conflict', 'another publish took this version number: try again');
    logger.info('guidance-published', { version: version.version, entries: entries.length, ...(restoredFrom !== undefined ? { restoredFrom } : {}) });
    await announcePublish(redis, version.version);
    await live.refresh('published');
    return version;
  };

  return {
    async overview(): Promise<GuidanceOverview> {
      const [draft, latest, versions, workers] = await Promise.all([store.drafts(), store.latest(), store.versionNumbers(), live.workers()]);
      return {
        draft,
        unpublished: !sameSet(draft, latest?.entries ?? []),
        live: latest ? { version: latest.version, entries: latest.entries, publishedAt: latest.publishedAt } : undefined,
        versions,
        workers,
      };
    },

    async create(input: EntryInput): Promise<GuidanceEntry> {
      checkNames(input);
      if ((await store.drafts()).length >= MAX_ENTRIES) throw new GuidanceRefusal(409, 'too_many_entries', `the draft already holds ${MAX_ENTRIES} entries`);
      const entry: GuidanceEntry = { ...input, id: `g_${randomBytes(6).toString('hex')}`, updatedAt: new Date().toISOString() };
      await store.putDraft(entry);
      return entry;
    },

    async update(id: string, input: EntryInput): Promise<GuidanceEntry> {
      checkNames(input);
      if (!(await store.draft(id))) throw new GuidanceRefusal(404, 'not_found', `no draft entry ${id}`);
      const entry: GuidanceEntry = { ...input, id, updatedAt: new Date().toISOString() };
      await store.putDraft(entry);
      return entry;
    },

    async remove(id: string): Promise<void> {
      if (!(await store.removeDraft(id))) throw new GuidanceRefusal(404, 'not_found', `no draft entry ${id}`);
    },

    async publish() {
      const entries = await store.drafts();
      await options.beforePublish?.(entries);
      return publishEntries(entries);
    },

    async rollback(to: number): Promise<PublishedVersion> {
      const target = await store.version(to);
      if (!target) throw new GuidanceRefusal(404, 'not_found', `no published version ${to}`);
      return publishEntries(target.entries, to);
    },

    async version(number: number): Promise<PublishedVersion> {
      const found = await store.version(number);
      if (!found) throw new GuidanceRefusal(404, 'not_found', `no published version ${number}`);
      return found;
    },
  };
}
export type GuidanceService = ReturnType<typeof createGuidanceService>;

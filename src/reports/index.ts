/**
 * Reports: what the assistant does for the business, from daily roll-ups in MongoDB.
 * `createReportsFeature` is the one way in: it returns the `/admin/reports` router and the hooks
 * that keep the roll-ups as things happen — the transcript writer's batches (`recordTranscripts`,
 * after MongoDB acknowledged them), hand-offs as they open (`recordHandoffs` wraps the hand-off
 * store's `open`), each turn's metered model calls and knowledge misses (`recordUsage`). A hook never throws: a
 * roll-up that fails is logged and counted (`reports_rollup_failed_total`), the transcript is
 * written all the same, and `npm run reports -- rebuild` recounts. docs/reports.md says what
 * each figure means.
 */
import express, { type Router } from 'express';
import type { Connection } from 'mongoose';
import type { TeamHours } from '../handoff/team-hours.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis.js';
import type { TranscriptRecord } from '../store/outbox.js';
import { rebuildRollups } from './rebuild.js';
import { createReportsRouter } from './router.js';
import { dayOf, handoffEndEvent, handoffEvent, resolutionEvent, transcriptEvents, type RollupEvent } from './rollup-events.js';
import { createRollupStore, type RollupStore } from './rollup-store.js';
import type { SatisfactionSource } from './satisfaction.js';
import { createWaitingHandoffs } from './waiting-handoffs.js';
import type { ModelPrices } from './summary.js';

export interface ReportsConfig {
  /** ADMIN_TOKEN: without it the page and its API do not exist. */
  adminToken: string | undefined;
  /** PUBLIC_BASE_URL: an https one makes the session cookie `Secure`. */
  publicBaseUrl: string;
  /** The channels a report can pick (the composition root's plugins' ids; a function when they are known later). */
  channels: readonly string[] | (() => readonly string[]);
  /** MODEL_PRICES: cost per conversation needs a price for every model used. */
  prices: ModelPrices | undefined;
  /** How often a worker writes the totals to MongoDB (default 60 s; every report flushes first too). */
  flushIntervalMs?: number;
}

export interface ReportsFeatureOptions {
  connection: Connection;
  redis: RedisClient;
  logger: Logger;
  metrics: Metrics;
  config: ReportsConfig;
  /** Satisfaction answers, once something stores them; until then the page says none yet. */
  csat?: SatisfactionSource;
  /**
   * A conversation's transcript page (a signed link): with it, the report has the hand-offs
   * waiting now (each linked); without, not.
   */
  transcriptLink?: (conversationId: string) => string;
  /** Today in the reports' time zone (tests pin it). */
  today?: () => string;
  /** The IANA time zone whose days the reports count (REPORTS_TIME_ZONE); UTC by default. */
  timeZone?: string;
  /** A team's opening hours (HANDOFF_TEAMS) for the first reply within them; absent: always open. */
  teamHours?: (team: string) => TeamHours | undefined;
}

interface OpenedHandoff {
  handoff: { _id: string; conversationId: string; channel: string; team: string; roleId: string; createdAt: Date };
  created: boolean;
}

/** What a hand-off's end returns (undefined: it did not end it); `endedAt` absent means now. */
type EndedHandoff = { _id: string; conversationId: string; channel: string; roleId?: string; createdAt?: Date; endedAt?: Date | undefined } | undefined;

interface CountedHandoffStore {
  open(...args: never[]): Promise<OpenedHandoff>;
  handBack?(...args: never[]): Promise<EndedHandoff>;
  close?(...args: never[]): Promise<EndedHandoff>;
}

export interface ReportsFeature {
  /** `/admin/reports/*` (mount at the root, before the admin API's bearer check on `/admin`). */
  router: Router;
  /** The transcript writer's hook: records MongoDB has just acknowledged, with their outbox entries' marks. Never throws. */
  recordTranscripts(records: readonly TranscriptRecord[], marks?: readonly string[]): Promise<void>;
  /** The transcript writer's hook: these entries left the outbox (their marks go). Never throws. */
  releaseTranscripts(marks: readonly string[]): Promise<void>;
  /** Wraps a hand-off store so that each hand-off it creates, and each end, is counted. */
  recordHandoffs<S extends CountedHandoffStore>(store: S): S;
  /**
   * Model use as the usage store folded it (every few seconds, not per turn), on its UTC day, and
   * the questions the business's knowledge had no answer for that the same fold took (each turn's
   * entry once: counted on its day and channel). Never throws.
   */
  recordUsage(
    folded: readonly { day: string; channelId: string; roleId?: string; model: string; calls: number; inputTokens: number; outputTokens: number }[],
    misses?: readonly { channelId: string; at: string }[],
  ): Promise<void>;
  /** `npm run reports -- rebuild`. */
  rebuild(): ReturnType<typeof rebuildRollups>;
  /** Starts the periodic flush (worker processes). */
  start(): void;
  /** Stops it and flushes once more. */
  close(): Promise<void>;
  /** The roll-up store (tests, the benchmark). */
  store: RollupStore;
}

const DEFAULT_FLUSH_MS = 60_000;
const REPORTS_PATH = '/admin/reports';

export function createReportsFeature(options: ReportsFeatureOptions): ReportsFeature {
  const { connection, redis, logger, metrics, config } = options;
  const store = createRollupStore(connection, redis, logger, options.teamHours);
  const zone = options.timeZone ?? 'UTC';
  const channels = () => (typeof config.channels === 'function' ? config.channels() : config.channels);
  const count = async (events: readonly RollupEvent[], what: string, marks?: readonly string[]) => {
    try {
      await store.count(events, marks);
    } catch (error) {
      metrics.increment('reports_rollup_failed_total', { what });
      logger.warn('reports-rollup-failed', { what, events: events.length, error });
    }
  };
  const reportsRouter = createReportsRouter({
    adminToken: config.adminToken,
    secureCookies: config.publicBaseUrl.startsWith('https:'),
    channels,
    prices: config.prices,
    store,
    redis,
    csat: options.csat,
    ...(options.transcriptLink ? { waiting: createWaitingHandoffs(connection, options.transcriptLink, () => store.waitingHandoffs()) } : {}),
    logger,
    metrics,
    today: options.today ?? (() => dayOf(new Date(), zone)),
    timeZone: zone,
  });
  // Mounted at the root with the service's other routers: it answers `/admin/reports/*` only.
  const router = express.Router();
  router.use(REPORTS_PATH, reportsRouter);
  return {
    router,
    store,
    async recordTranscripts(records, marks) {
      const { events, marks: eventMarks } = transcriptEvents(records, marks, zone);
      await count(events, 'transcripts', eventMarks);
    },
    async releaseTranscripts(marks) {
      await store.release(marks).catch((error: unknown) => logger.warn('reports-release-failed', { marks: marks.length, error }));
    },
    recordHandoffs(handoffs) {
      const open = handoffs.open.bind(handoffs) as (...args: never[]) => Promise<OpenedHandoff>;
      const wrapped: Partial<CountedHandoffStore> = {
        async open(...args: never[]) {
          const opened = await open(...args);
          // Marked by its own id (kept a few days): a hand-off counted twice counts once.
          if (opened.created) await count([handoffEvent(opened.handoff, zone)], 'handoff', [`h:${opened.handoff._id}`]);
          return opened;
        },
      };
      for (const name of ['handBack', 'close'] as const) {
        const end = handoffs[name]?.bind(handoffs) as ((...args: never[]) => Promise<EndedHandoff>) | undefined;
        if (!end) continue;
        wrapped[name] = async (...args: never[]) => {
          const ended = await end(...args);
          if (!ended) return ended;
          const done = { ...ended, endedAt: ended.endedAt ?? new Date() };
          // Its resolution time too (opening to end), on the day it opened.
          await count([handoffEndEvent(done, zone), ...(done.createdAt ? [resolutionEvent({ ...done, createdAt: done.createdAt }, zone)] : [])], 'handoff-end');
          return ended;
        };
      }
      return Object.assign(Object.create(handoffs) as typeof handoffs, wrapped);
    },
    async recordUsage(folded, misses = []) {
      // Summed per day, channel, role and model (the role's view counts it too).
      const sums = new Map<string, RollupEvent & { kind: 'usage' }>();
      for (const { day, channelId, roleId, model, calls, inputTokens, outputTokens } of folded) {
        const key = `${day}|${channelId}|${roleId ?? ''}|${model}`;
        const role = roleId ? { role: roleId } : {};
        const sum = sums.get(key) ?? { id: '', kind: 'usage', day, channel: channelId, ...role, model, calls: 0, inputTokens: 0, outputTokens: 0 };
        sum.calls += calls;
        sum.inputTokens += inputTokens;
        sum.outputTokens += outputTokens;
        sums.set(key, sum);
      }
      // Misses summed per day and channel: one figure each in the same script.
      const missed = new Map<string, RollupEvent & { kind: 'miss' }>();
      for (const { channelId, at } of misses) {
        const time = new Date(at);
        const day = dayOf(Number.isNaN(time.getTime()) ? new Date() : time, zone);
        const sum = missed.get(`${day}|${channelId}`) ?? { id: '', kind: 'miss', day, channel: channelId, count: 0 };
        sum.count = (sum.count ?? 0) + 1;
        missed.set(`${day}|${channelId}`, sum);
      }
      await count([...sums.values(), ...missed.values()], 'usage');
    },
    rebuild: () => rebuildRollups({ connection, store, channels: channels(), logger, timeZone: zone }),
    start: () => store.start(config.flushIntervalMs ?? DEFAULT_FLUSH_MS),
    close: () => store.close(),
  };
}

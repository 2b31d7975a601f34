/**
 * Hand-offs waiting now: not ended, and not yet answered — a hand-off nobody has taken (a
 * teammate's reply takes it first), or one taken whose first reply the roll-up still awaits (no
 * teammate's message since it opened that the channel took: the first reply's own rule) — oldest
 * first, each with a signed link to its transcript page. Read when a report is asked for, never
 * on a turn's path, and bounded: the open-hand-off pointers in MongoDB (one per hand-off not
 * ended, so as many as are open), the oldest MAX_CHECKED of their hand-offs read by `_id` (10 reads
 * in flight), and the roll-up's waits in Redis (one HVALS of a hash holding at most WAIT_DAYS of
 * hand-offs).
 */
import { siteOf } from './rollup-events.js';
import type { Connection } from 'mongoose';
import { handoffModels, type HandoffRecord } from '../handoff/handoff-records.js';

const MAX_CHECKED = 500;
const READS_AT_ONCE = 10;

export interface WaitingHandoff {
  handoff: string;
  conversation: string;
  channel: string;
  team: string;
  role: string;
  /** `open`: nobody took it yet; `taken`: a teammate took it but wrote nothing the customer got. */
  status: 'open' | 'taken';
  /** When the hand-off opened (ISO). */
  since: string;
  waitingSeconds: number;
  transcript: string;
}

export interface WaitingNow {
  handoffs: WaitingHandoff[];
  /** More than MAX_CHECKED hand-offs are open: only the oldest were looked at. */
  more: boolean;
}

export interface WaitingSource {
  /** `site`: a widget site's key, or `all` (absent: all). */
  read(filter: { channel: string; site?: string; role?: string }): Promise<WaitingNow>;
}

type Candidate = Pick<HandoffRecord, '_id' | 'conversationId' | 'channel' | 'team' | 'roleId' | 'status' | 'createdAt'>;

export function createWaitingHandoffs(
  connection: Connection,
  transcriptLink: (conversationId: string) => string,
  /** The hand-offs whose first reply the roll-up still awaits (`RollupStore.waitingHandoffs`). */
  awaited: () => Promise<Set<string>>,
  now = () => Date.now(),
): WaitingSource {
  const { pointers, handoffs } = handoffModels(connection);
  return {
    async read({ channel, site = 'all', role = 'all' }) {
      const [open, stillAwaited] = await Promise.all([pointers.find({}, { handoffId: 1, openedAt: 1 }).lean().exec(), awaited()]);
      const ids = open
        .filter((pointer) => !pointer.handoffId.startsWith('pending_'))
        .sort((a, b) => a.openedAt.getTime() - b.openedAt.getTime())
        .map((pointer) => pointer.handoffId);
      const checked = ids.slice(0, MAX_CHECKED);
      const candidates: Candidate[] = [];
      // One read per `_id` (FerretDB serves `_id` equality from its key, not `$in`), READS_AT_ONCE in flight.
      for (let start = 0; start < checked.length; start += READS_AT_ONCE) {
        const read = await Promise.all(
          checked
            .slice(start, start + READS_AT_ONCE)
            .map((id) => handoffs.findById(id, { conversationId: 1, channel: 1, team: 1, roleId: 1, status: 1, createdAt: 1 }).lean<Candidate>().exec()),
        );
        const found = read.filter((one): one is Candidate => one !== null);
        candidates.push(
          ...found.filter(
            (one) =>
              (one.status === 'open' || (one.status === 'taken' && stillAwaited.has(one._id))) &&
              (channel === 'all' || one.channel === channel) &&
              (site === 'all' || siteOf(one.conversationId) === site) &&
              (role === 'all' || one.roleId === role),
          ),
        );
      }
      const at = now();
      const waiting = candidates
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id))
        .map((one): WaitingHandoff => ({
          handoff: one._id,
          conversation: one.conversationId,
          channel: one.channel,
          team: one.team,
          role: one.roleId,
          status: one.status as 'open' | 'taken',
          since: one.createdAt.toISOString(),
          waitingSeconds: Math.max(0, Math.round((at - one.createdAt.getTime()) / 1000)),
          transcript: transcriptLink(one.conversationId),
        }));
      return { handoffs: waiting, more: ids.length > MAX_CHECKED };
    },
  };
}

/**
 * Hand-offs waiting now: open or taken, not ended, and not yet answered — no teammate's message
 * in the conversation since the hand-off opened that the channel took (a delivery id) — oldest
 * first, each with a signed link to its transcript page. Read from MongoDB when a report is
 * asked for, never on a turn's path, and bounded: the open-hand-off pointers (one per hand-off
 * not ended, so as many as are open), the oldest MAX_CHECKED of their hand-offs read by `_id` 20
 * at a time, and their conversations' messages since the oldest of them, 50 conversations a read.
 */
import type { Connection } from 'mongoose';
import { handoffModels, type HandoffRecord } from '../handoff/handoff-records.js';

const MAX_CHECKED = 500;
const IDS_PER_READ = 20;
const CONVERSATIONS_PER_READ = 50;

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
  read(filter: { channel: string }): Promise<WaitingNow>;
}

type Candidate = Pick<HandoffRecord, '_id' | 'conversationId' | 'channel' | 'team' | 'roleId' | 'status' | 'createdAt'>;

/** Whether a teammate's message the channel took was written in the conversation since its hand-off opened. */
async function answered(connection: Connection, candidates: readonly Candidate[]): Promise<Set<string>> {
  const done = new Set<string>();
  for (let start = 0; start < candidates.length; start += CONVERSATIONS_PER_READ) {
    const batch = candidates.slice(start, start + CONVERSATIONS_PER_READ);
    const since = new Date(Math.min(...batch.map((one) => one.createdAt.getTime())));
    const messages = await connection
      .collection<{ conversationId: string; roleId?: string; channelMessageId?: string; createdAt: Date }>('messages')
      .find(
        { conversationId: { $in: [...new Set(batch.map((one) => one.conversationId))] }, direction: 'outbound', createdAt: { $gte: since } },
        { projection: { conversationId: 1, roleId: 1, channelMessageId: 1, createdAt: 1 } },
      )
      .toArray();
    for (const one of batch) {
      const replied = messages.some(
        (message) =>
          message.conversationId === one.conversationId &&
          message.roleId?.startsWith('teammate:') === true &&
          typeof message.channelMessageId === 'string' &&
          message.createdAt >= one.createdAt,
      );
      if (replied) done.add(one._id);
    }
  }
  return done;
}

export function createWaitingHandoffs(connection: Connection, transcriptLink: (conversationId: string) => string, now = () => Date.now()): WaitingSource {
  const { pointers, handoffs } = handoffModels(connection);
  return {
    async read({ channel }) {
      const open = await pointers.find({}, { handoffId: 1, openedAt: 1 }).lean().exec();
      const ids = open
        .filter((pointer) => !pointer.handoffId.startsWith('pending_'))
        .sort((a, b) => a.openedAt.getTime() - b.openedAt.getTime())
        .map((pointer) => pointer.handoffId);
      const checked = ids.slice(0, MAX_CHECKED);
      const candidates: Candidate[] = [];
      for (let start = 0; start < checked.length; start += IDS_PER_READ) {
        const found = await handoffs
          .find({ _id: { $in: checked.slice(start, start + IDS_PER_READ) } }, { conversationId: 1, channel: 1, team: 1, roleId: 1, status: 1, createdAt: 1 })
          .lean<Candidate[]>()
          .exec();
        candidates.push(...found.filter((one) => (one.status === 'open' || one.status === 'taken') && (channel === 'all' || one.channel === channel)));
      }
      const done = await answered(connection, candidates);
      const at = now();
      const waiting = candidates
        .filter((one) => !done.has(one._id))
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

/**
 * What the live transcript page needs from the takeover service, as a port (the service in
 * `src/handoff/` satisfies it; the composition root passes it in), and the page's view of it:
 * which hand-off of the conversation the page acts on, who it says is acting, and how a stored
 * message is shown. The page never decides a transition itself: the service's atomic updates do.
 */
import type { MediaReference } from '../media/inbound-media.js';
import type { MessageRecord } from '../store/transcript-store.js';
import type { PageMessage } from './transcript-page.js';

/** Who acted, as the takeover service records it. */
export interface LiveActor {
  id: string;
  name: string;
  via: 'whatsapp' | 'page' | 'admin' | 'system';
  whatsapp?: string;
}

/** A hand-off record, as much of it as the page reads. */
export interface LiveHandoff {
  _id: string;
  team: string;
  status: string;
  conversationId: string;
  takenBy?: { name: string } | undefined;
  createdAt: Date;
}

/** One message of a conversation as the takeover service streams it. */
export interface LiveMessage {
  id: string;
  author: 'customer' | 'assistant' | 'teammate' | 'system';
  name?: string | undefined;
  text: string;
  at: number;
  template?: boolean | undefined;
  /** A customer's photos, voice notes and documents (store ids: the stream signs its own links to them). */
  media?: MediaReference[] | undefined;
}

export type LiveEvent = { type: 'message'; message: LiveMessage } | { type: 'takeover' };

/** Every action's answer: an `outcome`, and for a refusal who holds it or what was wrong. */
export interface LiveOutcome {
  outcome: string;
  holder?: { name: string };
  status?: string;
  error?: string;
}

export interface LiveTakeover {
  handoffsOf(conversationId: string): Promise<LiveHandoff[]>;
  get(handoffId: string): Promise<LiveHandoff | undefined>;
  takeOver(input: { handoffId: string; by: LiveActor }): Promise<LiveOutcome>;
  teammateReply(input: { handoffId: string; by: LiveActor; text: string }): Promise<LiveOutcome>;
  handBack(input: { handoffId: string; by: LiveActor; reason: 'page'; holderOnly?: boolean }): Promise<LiveOutcome>;
  close(input: { handoffId: string; by: LiveActor; reason: 'page' }): Promise<LiveOutcome>;
  /** Calls `listener` with each new message and takeover change of the conversation; resolves to an unsubscribe. */
  subscribe(conversationId: string, listener: (event: LiveEvent) => void): Promise<() => Promise<void>>;
}

/** A team as the page needs it: its label and its members' names (and WhatsApp numbers, their ids). */
export interface LiveTeam {
  label: string;
  members: readonly { name: string; whatsapp?: string | undefined }[];
}

export interface PageHandoff {
  id: string;
  team: string;
  teamLabel: string;
  status: string;
  holder: string | undefined;
}

/** The hand-off the page acts on: the conversation's taken one, else its newest open one. */
export function pageHandoff(handoffs: readonly LiveHandoff[], teams: Readonly<Record<string, LiveTeam | undefined>>): PageHandoff | undefined {
  const active = handoffs.filter((handoff) => handoff.status === 'open' || handoff.status === 'taken');
  const chosen =
    active.find((handoff) => handoff.status === 'taken') ?? [...active].sort((left, right) => right.createdAt.getTime() - left.createdAt.getTime())[0];
  if (!chosen) return undefined;
  return {
    id: chosen._id,
    team: chosen.team,
    teamLabel: teams[chosen.team]?.label ?? chosen.team,
    status: chosen.status,
    holder: chosen.status === 'taken' ? chosen.takenBy?.name : undefined,
  };
}

const MAX_FREE_NAME_LENGTH = 40;

/**
 * The actor a page action is recorded as: one of the team's configured members (by the WhatsApp
 * number they are known by everywhere else, so taking over here and replying from WhatsApp is
 * one person), or, for a team without members, the name typed. Undefined: not acceptable.
 */
export function pageActor(team: LiveTeam | undefined, name: string): LiveActor | undefined {
  const trimmed = name.trim();
  const members = team?.members ?? [];
  if (members.length === 0) {
    if (!trimmed || trimmed.length > MAX_FREE_NAME_LENGTH) return undefined;
    return { id: `page:${trimmed}`, name: trimmed, via: 'page' };
  }
  const member = members.find((candidate) => candidate.name === trimmed);
  if (!member) return undefined;
  return member.whatsapp
    ? { id: member.whatsapp, name: member.name, via: 'page', whatsapp: member.whatsapp }
    : { id: `page:${member.name}`, name: member.name, via: 'page' };
}

type StoredMessage = Pick<MessageRecord, '_id' | 'direction' | 'text' | 'status' | 'createdAt' | 'errorCode' | 'errorMessage' | 'roleId' | 'media'> &
  Partial<Pick<MessageRecord, 'guidance'>>;

// The takeover stores a teammate's message under the role `teammate:<name>`, and what it tells the customer itself under `system`.
const TEAMMATE_ROLE = /^teammate:(.+)$/;

function authorOf(record: StoredMessage): { author: PageMessage['author']; name?: string } {
  if (record.direction === 'inbound') return { author: 'customer' };
  const teammate = TEAMMATE_ROLE.exec(record.roleId ?? '')?.[1];
  if (teammate) return { author: 'teammate', name: teammate };
  return { author: record.roleId === 'system' ? 'system' : 'assistant' };
}

/** A stored message as the page shows it; a teammate's carries their name. */
export function pageMessage(record: StoredMessage): PageMessage {
  return {
    id: record._id,
    ...authorOf(record),
    text: record.text,
    createdAt: record.createdAt,
    status: record.status,
    errorCode: record.errorCode,
    errorMessage: record.errorMessage,
    ...(record.media?.length ? { media: record.media } : {}),
    ...(record.guidance ? { guidance: record.guidance } : {}),
  };
}

export function liveMessageOf(message: PageMessage): LiveMessage {
  return {
    id: message.id,
    author: message.author,
    ...(message.name ? { name: message.name } : {}),
    text: message.text,
    at: message.createdAt.getTime(),
    ...(message.media?.length ? { media: message.media } : {}),
  };
}

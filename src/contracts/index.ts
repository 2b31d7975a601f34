/**
 * The contracts every layer builds on — a role, a channel, one turn's context, the inbound
 * message — in their own module, so imports go one way: the orchestrator, queue, tools,
 * channels and roles import these, and these import none of them. What crosses a process
 * boundary (`InboundMessage`, through the inbox) is a zod schema with its type derived from it.
 * The orchestrator only ever calls what these interfaces expose and never branches on a role's
 * or a channel's id. Concrete roles live in `roles/`, channels in `channels/`.
 */
import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { ChannelToolName } from './tool-names.js';
import type { AssistantTool, Caller, Choice, LinkedCustomer, ToolScope } from './tool.js';

/** Facts a conversation has established for one role: flat, JSON-serialisable values. */
export type Facts = Record<string, string | number | boolean | null>;

/** A question the judge answers for a role on every fresh turn (namespaced `role.<id>.<key>`). */
export interface FactQuestion {
  question: string;
  type: 'string' | 'number' | 'boolean';
  /** Allowed values for a string fact; anything else is dropped. */
  values?: readonly string[];
}

/** A call the model made during the leg, with its result, as post-turn hooks see it. */
export interface ToolCallRecord {
  toolName: string;
  input: unknown;
  output: unknown;
  isError: boolean;
}

/** Turns a tool call and its result into facts the role keeps. */
type EvidenceRule = (call: ToolCallRecord) => Facts | undefined;

/** Who is talking, as the service verified it: `anonymous` callers can read no customer data. */
export type CallerStatus = 'anonymous' | 'identified';

export interface BriefInput {
  facts: Facts;
  /** Whether the service verified who is talking (e.g. so a role asks an anonymous caller to identify themselves). */
  caller: CallerStatus;
  /** Resolves a `{capability}` to the tool this channel binds for this role (e.g. `{handoff}`). */
  capabilityTool(capability: string): string | undefined;
}

export interface AfterTurnInput {
  facts: Facts;
  offeredTools: readonly string[];
  /** The tool this channel binds to a capability for this role (e.g. `handoff`), if any. */
  capabilityTool(capability: string): string | undefined;
  toolCalls: readonly ToolCallRecord[];
  replyText: string;
}

interface KpiInput extends AfterTurnInput {
  roleId: string;
  degraded: boolean;
}

export interface RoleDefinition {
  id: string;
  /** One line the judge reads to decide when this role answers. */
  description: string;
  instructions: string;
  toolScope: ToolScope<ChannelToolName>;
  /** Tools offered every turn whatever the ranking (still subject to `exclude`). */
  alwaysOffered?: readonly ChannelToolName[];
  /** Notes appended to the system prompt on every turn (e.g. which hand-off fits which request). */
  standingNotes?: readonly string[];
  facts?: Readonly<Record<string, FactQuestion>>;
  /** Facts the role keeps for its own play (e.g. `handoffUnavailable`): never shown to a teammate in a hand-off. */
  privateFacts?: readonly string[];
  buildBrief?(input: BriefInput): string | undefined;
  /** On a degraded turn, read this role's facts with one extra model call. */
  factFallback?: boolean;
  evidenceRules?: readonly EvidenceRule[];
  hooks?: {
    afterTurn?(input: AfterTurnInput): Facts | undefined;
    kpi?(input: KpiInput): Record<string, unknown>;
  };
}

/** The customer as a channel knows them. */
const CustomerIdentitySchema = z.object({
  /** Channel address, e.g. `whatsapp:+14155550100`. */
  address: z.string().min(1),
  displayName: z.string().optional(),
});

/** What a channel reports about where the customer is, read on every leg. */
export interface GroundingSource {
  label: string;
  text: string;
  /**
   * True only for what the service established itself (the verified caller, the address the
   * channel authenticated). Anything the customer controls (a profile name, a page title or
   * URL) leaves it unset: it then reaches the model fenced in a user-level message, never in
   * the system prompt.
   */
  verified?: boolean;
}

export interface ChannelDefinition {
  id: string;
  /** How replies on this channel should look (length, formatting). */
  promptFragment: string;
  /** Tools this channel provides to the model (hand-offs, entity selection). */
  tools: readonly AssistantTool[];
  /** Capability → tool bindings, e.g. `{ handoff: 'open_support_chat' }`. */
  capabilityTools: Readonly<Record<string, string>>;
  /** Per-role overlays on `capabilityTools`. */
  roleCapabilityTools?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /**
   * Who is talking, as the service has verified it (a linked WhatsApp number, a visitor whose
   * identity the website signed): the contact whose data this turn may read, or undefined for
   * an anonymous caller. Never derived from anything the model or an unsigned client wrote.
   */
  identify?(inbound: InboundMessage): Promise<LinkedCustomer | undefined>;
  /**
   * What the channel reports about the customer this leg; `session` holds facts its tools set,
   * `caller` is who `identify` verified this turn (read once per turn, so grounding needs no
   * second lookup).
   */
  grounding(
    turn: TurnInput,
    session: Readonly<Record<string, string | number | boolean | null>>,
    caller: Caller,
  ): Promise<readonly GroundingSource[]> | readonly GroundingSource[];
  /** Splits a reply into the messages the channel can carry, in order. */
  splitReply(text: string): string[];
  /** The channel shows `[title](https://…)` as a link (the widget): the service's "Source:" line links titles rather than printing addresses. */
  markdownLinks?: boolean;
  /** A message that starts the conversation over (e.g. the word "reset"), if this channel has one. */
  isResetCommand?(text: string): boolean;
  /** How replies leave: the turn runner calls this, the orchestrator never does. */
  transport: ChannelTransport;
}

export type SentStatus = 'queued' | 'sent' | 'delivered' | 'read';

/**
 * Extras of one reply part. `choices`: answers the customer may tap (on the reply's last part);
 * the text already lists them, so a channel that can't show buttons sends the text alone.
 */
export interface SendOptions {
  choices?: readonly Choice[];
  /** When the question stops taking these answers (ms since the epoch): a channel may disable its buttons then. */
  choicesExpireAt?: number;
  /** The question's language (ISO 639-1), for the channel's own words around the choices (a WhatsApp list's button). */
  choicesLanguage?: string;
}

export interface ChannelTransport {
  /** Best effort: shows the customer the assistant is working. Must never throw. */
  showTyping?(inbound: InboundMessage): Promise<void>;
  /** Sends one reply part (`part` counts from 0); throws ChannelSendError when the channel refuses it. */
  send(inbound: InboundMessage, text: string, part: number, options?: SendOptions): Promise<{ channelMessageId: string; status: SentStatus }>;
  /**
   * For providers without idempotent sends (Twilio): messages with this text that may be a send
   * claimed at `claimedAt` whose outcome was lost (a crash), newest first; empty when it did not
   * go out. Throws ChannelSendError when it can't tell. A channel without it resends instead
   * (its receiver dedupes by message id, as the widget does).
   */
  findSent?(inbound: InboundMessage, text: string, claimedAt: Date): Promise<{ channelMessageId: string; status: SentStatus }[]>;
  /** Streaming channels: a piece of the reply as the model produces it (best effort, never throws). */
  streamDelta?(inbound: InboundMessage, delta: string): void;
  /** Streaming channels: the reply is complete, flush any buffered deltas. */
  flushDeltas?(inbound: InboundMessage): Promise<void>;
  /**
   * Providers that refuse free text once this long has passed since the customer's last
   * message (WhatsApp: 24 hours); outside it only an approved template goes out (`sendTemplate`).
   */
  freeformWindowMs?: number;
  /**
   * Best effort, never throws (livepage, issue 12): shows the customer's client who holds the
   * conversation after the takeover entry `inbound.teammate` (taken: its actor; handed back or
   * closed: the assistant). The widget's header says "You're chatting with Ana from Support".
   */
  showHolder?(inbound: InboundMessage): Promise<void>;
  /** Sends an approved template (e.g. Twilio Content SID) with its variables, as the one message (part 0) answering `inbound`; throws ChannelSendError. */
  sendTemplate?(
    inbound: InboundMessage,
    template: { contentSid: string; variables: Record<string, string> },
  ): Promise<{ channelMessageId: string; status: SentStatus }>;
}

/**
 * One attachment of an inbound message, as the queue carries it: a channel's URL the worker
 * fetches (WhatsApp's `MediaUrl{i}`), or the id of bytes already in the media store (a widget
 * upload). Never the bytes themselves. `contentType` is what the sender declared; the worker
 * checks the bytes before trusting it.
 */
export const InboundMediaSchema = z
  .object({
    /** The media store id (GridFS `_id`) of bytes already stored. */
    id: z.string().min(1).max(200).optional(),
    /** Where the worker fetches it (checked against the channel's allowed hosts before any request). */
    url: z.string().url().max(2048).optional(),
    contentType: z.string().min(1).max(128),
    /** Bytes, when known (a stored upload). */
    size: z.number().int().nonnegative().optional(),
    filename: z.string().max(256).optional(),
  })
  .refine((media) => media.id !== undefined || media.url !== undefined, { message: 'a media needs an id or a url' });
export type InboundMedia = z.infer<typeof InboundMediaSchema>;

/**
 * A takeover entry in the customer's conversation inbox (so the conversation lock covers it
 * as it covers the assistant's turns): a teammate's reply (`text` is what they wrote, `from`
 * the customer it goes to), what taking, handing back or closing tells the customer and team, or
 * (`decided`) the service telling the customer what the team decided about a change they asked for.
 */
const TeammateEntrySchema = z.object({
  action: z.enum(['reply', 'taken', 'handed_back', 'closed', 'decided']),
  handoffId: z.string().min(1),
  /** Who acted (for `reply` and `taken`, the holder). */
  actor: z.object({
    id: z.string().min(1),
    name: z.string().min(1),
    via: z.enum(['whatsapp', 'page', 'admin', 'system']),
    whatsapp: z.string().optional(),
  }),
  /** The holder's team label, for the signature ("Ana, Sales team"). */
  teamLabel: z.string().min(1),
  /** This entry's takeover claimed the conversation just now: the rest of the team is told. */
  claimed: z.boolean().optional(),
  /** Why a takeover ended: `teammate`, `idle`, `admin`, `page`. */
  reason: z.string().optional(),
});
export type TeammateEntry = z.infer<typeof TeammateEntrySchema>;

/** One inbound message as the queue carries it, whatever the channel. */
export const InboundMessageSchema = z.object({
  channel: z.string().min(1),
  conversationKey: z.string().min(1),
  messageId: z.string().min(1),
  from: CustomerIdentitySchema,
  text: z.string(),
  receivedAt: z.number().int().nonnegative(),
  /** Channel-specific details (profile name, page URL) for grounding. */
  metadata: z.record(z.string(), z.string()),
  /** Attachments (photos, voice notes, documents), in the order the customer sent them. */
  media: z.array(InboundMediaSchema).max(10).optional(),
  /** Set on a takeover entry (never on a customer's message): see `TeammateEntrySchema`. */
  teammate: TeammateEntrySchema.optional(),
});
export type InboundMessage = z.infer<typeof InboundMessageSchema>;

export interface TurnInput {
  /** The conversation key: orchestrator state in Redis is keyed by it. */
  conversationId: string;
  /** The conversation's first turn: its orchestrator state is cleared before anything is read. */
  firstTurn: boolean;
  runId: string;
  inbound: InboundMessage;
  history: readonly ModelMessage[];
  signal: AbortSignal;
  logger: Logger;
  /** Called with each text delta as the model produces it (streaming channels). */
  onTextDelta?: (delta: string) => void;
  /**
   * Awaited before the turn does what must not be done twice (runs a tool, resumes a pending
   * question): the caller may hold the turn meanwhile, or abort it (`signal`) to start it over.
   */
  beforeAction?: () => Promise<void>;
  /**
   * The batch's tap on an answer button, decided on its own wherever it sat in the batch (the
   * last one when there are several): `inbound` then holds only the batch's other messages
   * (its text empty when the tap was alone, its metadata without `choice`).
   */
  tap?: {
    text: string;
    choice: string;
    /** When the tap's message arrived (ms since the epoch): a question's expiry is decided by it, not by when the turn runs. */
    receivedAt: number;
    /** The history without the tap's message: what the model reads when the tap was answered by the service's words. */
    history: readonly ModelMessage[];
  };
}

export interface TurnResult {
  runId: string;
  roleId: string;
  text: string;
  /** The model failed (or the leg was refused); `text` is what the customer gets instead. */
  failed: boolean;
  offeredTools: readonly string[];
  toolCalls: readonly ToolCallRecord[];
  /** Model calls made before the reply (judge, route fallback, fact fallback). */
  modelCalls: number;
  /** What post-turn work needs once the reply has been delivered. */
  postTurn?: PostTurnInput;
  /** Every model call the turn made (judge and reply), with its tokens: the turn's metering. */
  usage?: readonly ModelCallUsage[];
  /** The reply is a question with these answers to tap (sent with its last part). */
  choices?: readonly Choice[];
  /** When that question stops taking answers (ms since the epoch). */
  choicesExpireAt?: number;
  /** The language that question is written in (ISO 639-1), when its tool said. */
  choicesLanguage?: string;
  /** The business's guidance entries the reply's prompt quoted, and the escalation entries the judge found applying. */
  guidance?: { entries: readonly string[]; applied: readonly string[] };
  /** The business's knowledge had no answer: listed and counted when the turn is finished (with its metering, once per reply). */
  knowledgeMiss?: KnowledgeMissNote;
}

/** A question the business's knowledge had no answer for, as the turn that missed it carries it to its finish. */
export interface KnowledgeMissNote {
  role: string;
  /** The customer's latest message. */
  question: string;
  terms?: string;
  site?: string;
  channel: string;
  /** `<channel>:<message id>` of that message. */
  messageKey: string;
}

/** Carried from a leg to its post-turn step. */
export interface PostTurnInput {
  conversationId: string;
  roleId: string;
  facts: Facts;
  factsVersion: number;
  degraded: boolean;
  offeredTools: readonly string[];
  toolCalls: readonly ToolCallRecord[];
  replyText: string;
  channelId: string;
}

/** The model tiers a deployment configures (`MODEL_FAST`, `MODEL_SMART`). */
export type ModelTier = 'fast' | 'smart';

/** `vision`: the MODEL_VISION call describing a photo for a reply model that can't see it. */
export type ModelCallPurpose = 'judge' | 'reply' | 'vision';

/** One model call's usage, all its steps summed. */
export interface ModelCallUsage {
  purpose: ModelCallPurpose;
  tier: ModelTier | 'vision';
  /** The model that answered: its id for OpenAI, `provider:model` for any other provider. */
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** Requests the call made of the model when more than one (a tool call and its follow-up are two). */
  requests?: number;
}

/**
 * `POST /transcripts/:conversationId/actions`: what a teammate does from the live page — take
 * over, reply, hand back to the assistant, close, and run or decline a change only a teammate may
 * run (a confirmed action handed to the team). A request carries the signed link's parts
 * (the link's expiry applies) and the page's CSRF token (bound to that link, checked in
 * constant time), names the hand-off it acts on (which must be this conversation's) and who is
 * acting (one of the team's configured members). Every refusal is a 4xx with a reason and a
 * log line; every action is logged with who did it, and the takeover service records it.
 * This handler never changes a hand-off itself.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { formatIssues } from '../errors/issues.js';
import type { Logger } from '../logger.js';
import { pageActor, pageHandoff, type LiveActor, type LiveOutcome, type LiveTakeover, type LiveTeam } from './live-takeover.js';
import type { TranscriptLinks } from './transcript-link.js';
import { checkLink, setPrivateHeaders } from './transcript-http.js';
import { actionStateText, type PageAction, type PageActions, type PageDecision } from './page-actions.js';

const LIVE_ACTIONS = ['take_over', 'reply', 'hand_back', 'close', 'run_action', 'decline_action'] as const;
type LiveAction = (typeof LIVE_ACTIONS)[number];
const ActionIdSchema = z.uuid();
/** How long a decision waits for a run another click started (the MCP call's timeout and a margin). */
const SETTLE_MS = 20_000;
const SETTLE_POLL_MS = 200;
const inProgress = (action: PageAction) => action.state === 'confirmed' || action.state === 'running';

const ActionRequestSchema = z.object({
  expires: z.string().max(32),
  sig: z.string().max(128),
  csrf: z.string().max(256).optional(),
  handoffId: z.string().min(1).max(200),
  action: z.string().max(40),
  by: z.string().max(200),
  text: z.string().optional(),
  /** The change `run_action` / `decline_action` decides. */
  actionId: z.string().max(64).optional(),
});

export interface LiveActionsOptions {
  links: TranscriptLinks;
  takeover: LiveTakeover;
  teams: Readonly<Record<string, LiveTeam | undefined>>;
  /** The longest reply a teammate may send (413 beyond). */
  maxReplyChars: number;
  /** Confirmed actions: without them, run_action and decline_action are unknown. */
  actions?: PageActions;
  logger: Logger;
  now?: () => number;
}

/** What each outcome of the takeover service means for the page: success, or a status and what to tell the teammate. */
function answerOf(result: LiveOutcome): { status: number; error?: string } {
  switch (result.outcome) {
    case 'taken':
    case 'queued':
    case 'handed_back':
    case 'closed':
      return { status: 200 };
    case 'held':
    case 'not_holder':
      return { status: 409, error: `${result.holder?.name ?? 'Someone else'} is handling this` };
    case 'ended':
    case 'already_ended':
    case 'not_taken':
      return {
        status: 409,
        error: result.status === 'open' ? 'Nobody has taken this conversation over' : `This hand-off is already ${result.status?.replace('_', ' ') ?? 'over'}`,
      };
    case 'not_found':
      return { status: 404, error: 'This hand-off no longer exists' };
    case 'invalid':
      return { status: 400, error: result.error ?? 'invalid request' };
    default:
      return { status: 409, error: 'That could not be done' };
  }
}

/** Answers a refusal: logged with its reason, the error the page shows. */
type Refuse = (status: number, error: string, reason: string, fields?: Record<string, unknown>) => void;

/** The takeover service's move a page action asks for. */
function runTakeover(
  takeover: LiveTakeover,
  action: Exclude<LiveAction, 'run_action' | 'decline_action'>,
  handoffId: string,
  by: LiveActor,
  text: string,
): Promise<LiveOutcome> {
  switch (action) {
    case 'take_over':
      return takeover.takeOver({ handoffId, by });
    case 'reply':
      return takeover.teammateReply({ handoffId, by, text });
    case 'hand_back':
      // Only whoever holds it hands it back from the page: anyone else is told who does.
      return takeover.handBack({ handoffId, by, reason: 'page', holderOnly: true });
    case 'close':
      return takeover.close({ handoffId, by, reason: 'page' });
  }
}

/**
 * The request checked before anything is looked up: a JSON body of the expected shape, a valid
 * link for this conversation opened on the page itself with its CSRF token, a known action and a
 * reply within bounds. Undefined once it refused.
 */
function checkRequest(
  options: LiveActionsOptions,
  request: Request<{ conversationId: string }>,
  refuse: Refuse,
): { body: z.infer<typeof ActionRequestSchema>; action: LiveAction; text: string } | undefined {
  const { links } = options;
  if (!request.is('application/json')) return void refuse(415, 'expected a JSON body', 'content_type');
  const parsed = ActionRequestSchema.safeParse(request.body);
  if (!parsed.success) return void refuse(400, formatIssues(parsed.error.issues), 'malformed');
  const body = parsed.data;
  const { check, link } = checkLink(links, request.params.conversationId, body);
  if (check !== 'ok' || !link) {
    if (check === 'expired') refuse(410, 'This link has expired', 'link_expired');
    else refuse(403, 'This link is not valid', 'link_invalid');
    return undefined;
  }
  // A browser says where a request comes from: only the page itself may act.
  const site = request.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin') return void refuse(403, 'cross-site requests are not allowed', 'cross_site', { site });
  if (!body.csrf || !links.verifyCsrf(link, body.csrf)) {
    refuse(403, body.csrf ? 'invalid CSRF token: reload the page' : 'missing CSRF token', body.csrf ? 'csrf_invalid' : 'csrf_missing');
    return undefined;
  }
  const action = LIVE_ACTIONS.find((known) => known === body.action);
  if (!action) return void refuse(400, `unknown action: expected one of ${LIVE_ACTIONS.join(', ')}`, 'unknown_action');
  const text = body.text?.trim() ?? '';
  if (action === 'reply' && text === '') return void refuse(400, 'the reply is empty', 'empty_reply');
  if (text.length > options.maxReplyChars) {
    refuse(413, `the reply is longer than ${options.maxReplyChars} characters`, 'reply_too_long', { maxChars: options.maxReplyChars });
    return undefined;
  }
  return { body, action, text };
}

/**
 * The actions machinery's decision on a change, waiting out a run another click started (asking
 * again never runs it twice); undefined once it answered 503 (the business system did not answer).
 */
async function settledDecision(
  actions: PageActions,
  logger: Logger,
  where: { conversationId: string; handoffId: string },
  actionId: string,
  decision: { run: boolean; by: LiveActor },
  response: Response,
): Promise<PageDecision | undefined> {
  const { run, by } = decision;
  try {
    let decided = await actions.decide(where.conversationId, actionId, { run, by: by.id, name: by.name });
    for (let waited = 0; decided.outcome === 'decided' && inProgress(decided.action) && waited < SETTLE_MS; waited += SETTLE_POLL_MS) {
      await delay(SETTLE_POLL_MS);
      decided = await actions.decide(where.conversationId, actionId, { run, by: by.id, name: by.name });
    }
    return decided;
  } catch (error) {
    // The business system did not answer: the change stays running and a second click resolves it (same idempotency key).
    logger.warn('transcript-action-unresolved', { ...where, actionId, by: by.name, error });
    response.status(503).json({ error: 'The business system did not answer. Try again: it will not run twice.' });
    return undefined;
  }
}

/** A teammate's decision on a change handed to the team: what it is now, or why it could not be decided. */
async function decideAction(
  options: LiveActionsOptions,
  runIt: boolean,
  actionId: string | undefined,
  by: LiveActor,
  where: { conversationId: string; handoffId: string },
  refuse: Refuse,
  response: Response,
): Promise<void> {
  const { logger } = options;
  const id = ActionIdSchema.safeParse(actionId);
  if (!options.actions) {
    refuse(400, `unknown action: expected one of take_over, reply, hand_back, close`, 'unknown_action');
    return;
  }
  if (!id.success) {
    refuse(400, 'actionId: expected the id of a change', 'invalid_action_id');
    return;
  }
  const decided = await settledDecision(options.actions, logger, where, id.data, { run: runIt, by }, response);
  if (!decided) return;
  // The link opens one conversation: another's change is as unknown as a missing one.
  if (decided.outcome !== 'decided') {
    if (decided.outcome === 'unknown') refuse(404, 'This change no longer exists', 'unknown_change', { actionId: id.data });
    else refuse(409, 'Only the customer can confirm this change', 'not_for_team', { actionId: id.data });
    return;
  }
  const { action } = decided;
  const view = { id: action.id, state: action.state, stateText: actionStateText(action, (options.now ?? Date.now)()) };
  const asked = runIt ? ['done', 'failed'] : ['cancelled'];
  const fields = { ...where, actionId: action.id, run: runIt, by: by.name, byId: by.id, state: action.state };
  if (!asked.includes(action.state) || (!runIt && !decidedBy(action, by))) {
    // Decided before (by someone else, or the other way), or expired: the page shows what it is.
    logger.info('transcript-action-refused', { ...fields, outcome: 'already_decided' });
    response.status(409).json({ error: `This change was already decided: ${view.stateText}`, action: view });
    return;
  }
  logger.info('transcript-action', { ...fields, action: runIt ? 'run_action' : 'decline_action' });
  response.status(200).json({ ok: true, action: view });
}

export function createLiveActionsHandler(options: LiveActionsOptions) {
  const { takeover, teams, logger } = options;

  return async (request: Request<{ conversationId: string }>, response: Response): Promise<void> => {
    setPrivateHeaders(response);
    const conversationId = request.params.conversationId;
    const refuse: Refuse = (status, error, reason, fields = {}) => {
      logger.warn('transcript-action-rejected', { status, reason, conversationId, ...fields });
      response.status(status).json({ error });
    };

    const checked = checkRequest(options, request, refuse);
    if (!checked) return;
    const { body, action, text } = checked;
    const handoff = await takeover.get(body.handoffId);
    // The link opens one conversation: a hand-off of another is as unknown as a missing one.
    if (!handoff || handoff.conversationId !== conversationId) {
      refuse(404, 'This hand-off no longer exists', 'unknown_handoff');
      return;
    }
    const by = pageActor(teams[handoff.team], body.by);
    if (!by) {
      refuse(400, 'choose your name from the team', 'unknown_teammate');
      return;
    }

    if (action === 'run_action' || action === 'decline_action') {
      await decideAction(options, action === 'run_action', body.actionId, by, { conversationId, handoffId: handoff._id }, refuse, response);
      return;
    }
    const result = await runTakeover(takeover, action, handoff._id, by, text);
    const answer = answerOf(result);
    const current = pageHandoff(await takeover.handoffsOf(conversationId), teams) ?? null;
    if (answer.error) {
      logger.info('transcript-action-refused', { conversationId, handoffId: handoff._id, action, by: by.name, outcome: result.outcome });
      response.status(answer.status).json({ error: answer.error, outcome: result.outcome, handoff: current });
      return;
    }
    logger.info('transcript-action', { conversationId, handoffId: handoff._id, action, by: by.name, byId: by.id, outcome: result.outcome });
    response.status(200).json({ ok: true, outcome: result.outcome, handoff: current });
  };
}

/** A decline is this teammate's when the stored reason names them (a second decline by them is still theirs to see). */
const decidedBy = (action: PageAction, by: LiveActor): boolean => action.reason === `declined by ${by.name}`;

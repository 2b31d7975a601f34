/**
 * What the chat does with each event of the stream (a turn starting, streamed text, a complete
 * message, a hand-off, who holds the conversation), the typing indicator those events drive, and
 * the buttons of the latest question.
 */
import { createChoiceGroup, type ChoiceGroup, type WidgetChoice } from './choices.js';
import { questionText } from './question-text.js';
import type { StreamEvent } from './event-stream.js';
import type { MessageList } from './message-list.js';
import type { Panel } from './panel.js';
import type { WidgetStrings } from './strings.js';

// A slow turn says the service is still on it; the typing indicator clears itself only if the
// reply never comes (longer than any turn's budget: the service apologises before that).
const STILL_WORKING_MS = 20_000;
const TYPING_TIMEOUT_MS = 180_000;

/** Shows (or clears) the typing indicator, and "still working" once a reply is slow. */
export function createTypingIndicator(list: MessageList): (visible: boolean) => void {
  let typingTimer: ReturnType<typeof setTimeout> | undefined;
  let stillTimer: ReturnType<typeof setTimeout> | undefined;
  return (visible) => {
    clearTimeout(typingTimer);
    clearTimeout(stillTimer);
    list.setTyping(visible);
    if (!visible) return;
    typingTimer = setTimeout(() => list.setTyping(false), TYPING_TIMEOUT_MS);
    stillTimer = setTimeout(() => list.setStillWorking(true), STILL_WORKING_MS);
  };
}

// While the visitor types, a report at most this often (the service's report stands for its quiet period, 1.5 s by default).
const TYPING_REPORT_MS = 1_000;

/** Reports the visitor typing (at most once a second) and stopping (once). */
export function createTypingReporter(send: (typing: boolean) => void) {
  /** When typing was last reported (0: not typing, or the message that ended it was sent). */
  let typingReportedAt = 0;
  return {
    report(typing: boolean): void {
      const now = Date.now();
      if (typing ? now - typingReportedAt < TYPING_REPORT_MS : typingReportedAt === 0) return;
      typingReportedAt = typing ? now : 0;
      send(typing);
    },
    /** A message was sent: it ends the typing it was (the service sees it arrive after the last report). */
    ended(): void {
      typingReportedAt = 0;
    },
  };
}

export interface QuestionButtons {
  /** Draws a question's buttons under its message: a tap answers it; disabled when not `open`, and once `expireAt` passes. */
  show(id: string, choices: WidgetChoice[], open: boolean, expireAt: number | undefined, chosen?: string): void;
  /** The open question's buttons go stale (a newer message, or one the visitor typed). */
  closeOpen(): void;
  /** Forgets the open question without touching its buttons (the log is redrawn). */
  forget(): void;
}

export function createQuestionButtons(list: MessageList, label: string, answer: (choice: WidgetChoice) => void): QuestionButtons {
  /** The buttons of the latest question, while they may still be used. */
  let openChoices: ChoiceGroup | undefined;
  return {
    show(id, choices, open, expireAt, chosen) {
      const group = createChoiceGroup(choices, label, answer);
      list.attachUnder(id, group.element);
      if (!open) return group.disable(chosen);
      openChoices = group;
      if (expireAt !== undefined) setTimeout(group.disable, expireAt - Date.now());
    },
    closeOpen() {
      openChoices?.disable();
      openChoices = undefined;
    },
    forget() {
      openChoices = undefined;
    },
  };
}

export interface EventHandlerDeps {
  list: MessageList;
  panel: Panel;
  strings: WidgetStrings;
  questions: QuestionButtons;
  setTyping(visible: boolean): void;
  /** True when the message id is one this tab's outbox sent; the stream showing it (or an answer to it) says the service took it. */
  ownMessage(id: string): boolean;
  onReply(text: string): void;
  /** Reads the history again (a reply to a message this tab never saw). */
  resync(): void;
}

/** One handler per event type; adding an event adds an entry. */
export function createEventHandlers(deps: EventHandlerDeps): (event: StreamEvent) => void {
  const { list, panel, strings, questions, setTyping } = deps;
  const handlers: { [Type in StreamEvent['type']]: (event: Extract<StreamEvent, { type: Type }>) => void } = {
    typing() {
      // A turn starts: if a reply is still half-streamed, its turn started over and streams anew.
      list.restartStreaming();
      setTyping(true);
    },
    delta(event) {
      setTyping(false);
      list.appendDelta(event.messageId, event.text);
    },
    message(event) {
      if (event.role === 'visitor') {
        // Sent from another tab of the same conversation.
        if (!deps.ownMessage(event.id)) list.addVisitor(event.id, event.text, event.at);
        return;
      }
      // An answer to a message of ours: 'sent' for it first, even if its send has not answered yet.
      const ours = event.replyTo !== undefined && deps.ownMessage(event.replyTo);
      setTyping(false);
      // A newer message makes any earlier question's buttons stale.
      questions.closeOpen();
      // Drawn with buttons, a question says its answers once: the buttons, not the list its text has for typed answers.
      const text = event.choices ? questionText(event.text, event.choices) : event.text;
      if (list.completeAssistant(event.id, text, event.sender, event.at, event.failed ? event.replyTo : undefined)) {
        if (event.choices) questions.show(event.id, event.choices, true, event.choicesExpireAt);
        deps.onReply(text);
      }
      // A reply to a message this tab has never seen: another tab sent it; catch up.
      if (event.replyTo && !ours && !list.has(event.replyTo)) deps.resync();
    },
    handoff(event) {
      // No team could take it: the assistant says so in its reply; a status line would mislead.
      if (event.status === 'unavailable') return;
      list.addStatus(strings.handoff(event.team));
      deps.onReply(strings.handoff(event.team));
    },
    state(event) {
      panel.setHolder(event.holder);
    },
  };
  return (event) => (handlers[event.type] as (event: StreamEvent) => void)(event);
}

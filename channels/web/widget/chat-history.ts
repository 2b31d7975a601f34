/**
 * Reads the conversation's history and redraws the log with it (messages still waiting in the
 * outbox after it, the questions' buttons again), one read at a time: a read asked for meanwhile
 * runs once more after it.
 */
import type { ApiResult, History as HistoryAnswer } from './api.js';
import type { QuestionButtons } from './chat-events.js';
import { questionText } from './question-text.js';
import type { MessageList, OutgoingBubble } from './message-list.js';
import type { Panel } from './panel.js';

export interface HistorySyncOptions {
  read(): Promise<ApiResult<HistoryAnswer>>;
  /** The outbox's bubbles the history does not hold yet. */
  unconfirmed(historyIds: ReadonlySet<string>): OutgoingBubble[];
  list: MessageList;
  questions: QuestionButtons;
  panel: Panel;
}

export function createHistorySync(options: HistorySyncOptions) {
  const { list, questions, panel } = options;
  let resyncing: Promise<string | undefined> | undefined;
  let resyncAgain = false;
  let historyLoaded = false;

  /** Reads the history and redraws the log with it. Resolves to the stream position it is current to. */
  const resync = (): Promise<string | undefined> => {
    if (resyncing) {
      resyncAgain = true;
      return resyncing;
    }
    resyncing = (async () => {
      let position: string | undefined;
      do {
        resyncAgain = false;
        const result = await options.read();
        if (!result.ok) return undefined;
        const { lastEventId, holder } = result.value;
        // A question drawn with buttons shows its text without the list of its answers.
        const messages = result.value.messages.map((message) =>
          message.choices && message.role === 'assistant' ? { ...message, text: questionText(message.text, message.choices) } : message,
        );
        const waiting = options.unconfirmed(new Set(messages.map((message) => message.id)));
        list.replace(messages, waiting);
        // The questions' buttons again: the open one tappable (unless a message waiting to be sent answers it), the rest disabled.
        questions.forget();
        for (const message of messages) {
          if (message.choices)
            questions.show(message.id, message.choices, message.choicesOpen && waiting.length === 0, message.choicesExpireAt, message.chosen);
        }
        panel.setHolder(holder);
        historyLoaded = true;
        position = lastEventId;
      } while (resyncAgain);
      return position;
    })().finally(() => {
      resyncing = undefined;
    });
    return resyncing;
  };
  return { resync, loaded: (): boolean => historyLoaded };
}

/**
 * The chat part's entry point (bundled on its own as an ES module by scripts/build-widget.ts,
 * imported by widget.ts through parts.ts): the panel with its attachments, the chat behind it,
 * the phone modal and the panel's stylesheet. The panel can come first: opened while the
 * service could not be reached since the page loaded, it shows the greeting, the composer and a
 * banner saying messages wait; what the visitor sends then is a muted bubble, handed to the
 * chat (and sent) once a session is there.
 */
import type { Session, SiteSettings, WidgetApi } from './api.js';
import { attachmentStringsFrom } from './attachment-strings.js';
import { createAttachments } from './attachments.js';
import { createChat, type Chat } from './chat.js';
import type { OutgoingBubble } from './message-list.js';
import { createPageModal } from './modal.js';
import { createPanel, type Panel } from './panel.js';
import { PANEL_CSS } from './panel-styles.js';
import { plainText } from './rich-text.js';
import type { Catalogue, WidgetStrings } from './strings.js';
import type { VisitorStore } from './visitor-store.js';

export interface PanelContext {
  site: SiteSettings;
  catalogue: Catalogue;
  strings: WidgetStrings;
  panelId: string;
  onClose(): void;
  /** A message was written while there is no session: try for one now. */
  onQueued(): void;
}

export interface ChatContext {
  api: WidgetApi;
  store: VisitorStore;
  session: Session;
  language: string;
  /** A reply or hand-off arrived: its plain-text preview. */
  onReply(preview: string): void;
  /** The service took a message of the visitor's (its text). */
  onSent(text: string): void;
}

export interface ChatPanel {
  panel: Panel;
  /** The chat behind the panel, once started. */
  chat(): Chat | undefined;
  /** A session is there: the chat starts, and what was written meanwhile is sent. */
  start(context: ChatContext): Chat;
}

function createChatPanel(context: PanelContext): ChatPanel {
  const { strings, site } = context;
  const attachmentStrings = attachmentStringsFrom(context.catalogue);
  let chat: Chat | undefined;
  // Written before there was a session: muted bubbles, sent in order once there is.
  const waiting: { text: string; bubble: OutgoingBubble }[] = [];
  const attachments = createAttachments({
    strings: attachmentStrings,
    maxBytes: site.maxUploadBytes,
    upload: (file, onProgress, signal) => (chat ? chat.upload(file, onProgress, signal) : Promise.resolve({ ok: false, kind: 'network' })),
  });
  const panel = createPanel(
    strings,
    site,
    context.panelId,
    {
      onClose: context.onClose,
      onNewChat: () => void chat?.newChat(),
      onSend(text) {
        if (chat) {
          chat.send(text);
          return;
        }
        const trimmed = text.trim();
        if (trimmed === '') return;
        panel.clearInput();
        const bubble = panel.list.addOutgoing(trimmed);
        bubble.setState('waiting', { reason: strings.notSentYet });
        waiting.push({ text: trimmed, bubble });
        context.onQueued();
      },
      onTyping: (typing) => chat?.typing(typing),
    },
    attachments,
  );
  attachments.acceptDrops(panel.element);
  attachments.acceptPaste(panel.input);
  return {
    panel,
    chat: () => chat,
    start(chatContext) {
      chat = createChat({
        api: chatContext.api,
        store: chatContext.store,
        session: chatContext.session,
        strings,
        panel,
        attachments: { tray: attachments, strings: attachmentStrings },
        language: chatContext.language,
        onReply: (text) => chatContext.onReply(plainText(text).replace(/\s+/g, ' ').trim()),
        onSent: chatContext.onSent,
      });
      panel.setQueued(false);
      for (const { text, bubble } of waiting.splice(0)) {
        bubble.element.remove();
        chat.queue(text);
      }
      return chat;
    },
  };
}

/** What the chat part gives widget.js (`import()`ed, parts.ts). */
export const part = { createChatPanel, createPageModal, css: PANEL_CSS };

export type ChatPart = typeof part;

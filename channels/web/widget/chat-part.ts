/**
 * The chat part's entry point (bundled on its own as an ES module by scripts/build-widget.ts,
 * imported by widget.ts through parts.ts): the panel with its attachments, the chat behind it, and the
 * panel's stylesheet.
 */
import type { Session, WidgetApi } from './api.js';
import { attachmentStringsFrom } from './attachment-strings.js';
import { createAttachments } from './attachments.js';
import { createChat, type Chat } from './chat.js';
import { createPageModal } from './modal.js';
import { createPanel, type Panel } from './panel.js';
import { PANEL_CSS } from './panel-styles.js';
import { plainText } from './rich-text.js';
import type { Catalogue, WidgetStrings } from './strings.js';
import type { VisitorStore } from './visitor-store.js';

export interface ChatContext {
  api: WidgetApi;
  store: VisitorStore;
  session: Session;
  catalogue: Catalogue;
  strings: WidgetStrings;
  language: string;
  panelId: string;
  onClose(): void;
}

/** The panel (with its attachments) and the chat behind it, for a started session; `onReply` gets a plain-text preview. */
function assembleChat(context: ChatContext, onReply: (preview: string) => void): { panel: Panel; chat: Chat } {
  const { session, strings } = context;
  const { site } = session;
  const attachmentStrings = attachmentStringsFrom(context.catalogue);
  const attachments = createAttachments({
    strings: attachmentStrings,
    maxBytes: site.maxUploadBytes,
    upload: (file, onProgress, signal) => chat.upload(file, onProgress, signal),
  });
  const panel = createPanel(
    strings,
    site,
    context.panelId,
    {
      onClose: context.onClose,
      onNewChat: () => void chat.newChat(),
      onSend: (text) => chat.send(text),
      onTyping: (typing) => chat.typing(typing),
    },
    attachments,
  );
  attachments.acceptDrops(panel.element);
  attachments.acceptPaste(panel.input);
  const chat = createChat({
    api: context.api,
    store: context.store,
    session,
    strings,
    panel,
    attachments: { tray: attachments, strings: attachmentStrings },
    language: context.language,
    onReply: (text) => onReply(plainText(text).replace(/\s+/g, ' ').trim()),
  });
  return { panel, chat };
}

/** What the chat part gives widget.js (`import()`ed, parts.ts). */
export const part = { assembleChat, createPageModal, css: PANEL_CSS };

export type ChatPart = typeof part;

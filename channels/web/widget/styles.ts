/**
 * The widget's stylesheet, scoped to its shadow root. It is adopted as a constructable
 * stylesheet, which a page's `style-src` policy does not block; browsers without them get a
 * <style> element carrying the embedding script's nonce. No style attribute is ever written.
 */
import { ATTACHMENT_CSS } from './attachments.js';
import { CHOICES_CSS } from './choices.js';
import type { Theme } from './theme.js';

const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';

function css(theme: Theme): string {
  return `
:host { all: initial; }
.root {
  /* A page rule matching our host ("* { text-shadow: … }") beats :host, and its inherited
     properties would flow in: cut every inheritance at the root, then set what we use. */
  all: initial;
  --accent: ${theme.accent}; --on-accent: ${theme.onAccent}; --link: ${theme.link}; --ring: ${theme.ring};
  --text: #1d2939; --muted: #667085; --line: #e4e7ec; --surface: #f5f6f8; --danger: #b42318;
  font: 15px/1.45 ${FONT}; color: var(--text); text-align: left; letter-spacing: normal; word-spacing: normal;
  text-transform: none; text-indent: 0; text-shadow: none; white-space: normal; visibility: visible; direction: ltr; cursor: auto;
  -webkit-font-smoothing: antialiased;
}
*, *::before, *::after { box-sizing: border-box; }
[hidden] { display: none !important; }
button { font: inherit; margin: 0; }
.sr-only {
  position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden;
  clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap; border: 0;
}
.launcher {
  position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; width: 60px; height: 60px;
  padding: 0; border: 0; border-radius: 50%; background: var(--accent); color: var(--on-accent);
  display: grid; place-items: center; cursor: pointer;
  box-shadow: 0 8px 24px rgba(16, 24, 40, 0.22), 0 2px 6px rgba(16, 24, 40, 0.12);
  transition: transform 0.15s ease, box-shadow 0.15s ease;
}
.launcher:hover { transform: translateY(-2px); box-shadow: 0 12px 28px rgba(16, 24, 40, 0.26); }
.launcher:focus-visible { outline: 3px solid var(--accent); outline-offset: 3px; }
.launcher svg { width: 28px; height: 28px; }
.badge {
  position: absolute; top: -4px; right: -4px; min-width: 22px; height: 22px; padding: 0 6px;
  border: 2px solid #fff; border-radius: 11px; background: #d92d20; color: #fff;
  font-size: 12px; font-weight: 700; line-height: 18px; text-align: center;
}
.panel {
  position: fixed; right: 20px; bottom: 20px; z-index: 2147483000;
  width: 380px; height: 640px; max-height: calc(100vh - 40px);
  display: flex; flex-direction: column; overflow: hidden;
  background: #fff; border-radius: 16px;
  box-shadow: 0 16px 48px rgba(16, 24, 40, 0.2), 0 2px 8px rgba(16, 24, 40, 0.08);
}
.header {
  display: flex; align-items: center; gap: 12px; padding: 14px 10px 14px 16px;
  background: var(--accent); color: var(--on-accent);
}
.avatar {
  flex: none; width: 38px; height: 38px; border-radius: 50%; display: grid; place-items: center;
  background: rgba(255, 255, 255, 0.22); border: 1px solid rgba(255, 255, 255, 0.35);
  font-size: 16px; font-weight: 700;
}
.avatar.teammate { background: var(--on-accent); color: var(--accent); }
.heading { flex: 1; min-width: 0; }
.title { margin: 0; font-size: 16px; font-weight: 650; line-height: 1.25;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.subtitle { margin: 2px 0 0; font-size: 12.5px; line-height: 1.3; opacity: 0.88; overflow-wrap: anywhere; }
.panel:focus { outline: none; }
.icon-button {
  flex: none; width: 36px; height: 36px; padding: 0; border: 0; border-radius: 10px;
  display: grid; place-items: center; background: transparent; color: inherit; cursor: pointer;
}
.icon-button:hover { background: rgba(255, 255, 255, 0.18); }
.icon-button:focus-visible { outline: 2px solid currentColor; outline-offset: -2px; }
.icon-button svg { width: 20px; height: 20px; }
.banner {
  padding: 8px 16px; font-size: 13px; background: #fffaeb; color: #93370d; border-bottom: 1px solid #fedf89;
}
.connection {
  padding: 6px 16px; font-size: 13px; text-align: center; background: var(--surface); color: var(--muted);
}
.connection:empty { display: none; }
.log {
  flex: 1; min-height: 0; overflow-y: auto; overscroll-behavior: contain;
  display: flex; flex-direction: column; gap: 10px; padding: 18px 16px; background: var(--surface);
}
.message {
  max-width: 85%; padding: 10px 14px; border-radius: 18px; overflow-wrap: anywhere;
}
.incoming { align-self: flex-start; max-width: 85%; display: flex; flex-direction: column; align-items: flex-start; gap: 4px; }
.incoming .message { max-width: 100%; }
.message.assistant {
  background: #fff; border: 1px solid var(--line); border-bottom-left-radius: 6px;
  box-shadow: 0 1px 2px rgba(16, 24, 40, 0.04);
}
.message.teammate { border-color: var(--accent); }
.outgoing { align-self: flex-end; max-width: 85%; display: flex; flex-direction: column; align-items: flex-end; gap: 4px; }
/* Who wrote a message and when, over the first message of a group; the rest of the group sits close under it. */
.sender-line { display: flex; align-items: center; gap: 6px; min-width: 0; font-size: 12px; line-height: 1.3; color: var(--muted); }
.sender-avatar {
  flex: none; width: 22px; height: 22px; border-radius: 50%; display: grid; place-items: center;
  background: var(--accent); color: var(--on-accent); font-size: 11px; font-weight: 700;
}
.sender-avatar.teammate { background: #fff; color: var(--accent); border: 1.5px solid var(--accent); }
.sender-name { font-weight: 600; color: #344054; }
.sender-team::before, .sender-time::before { content: '\\00b7'; margin-right: 6px; }
.grouped { margin-top: -6px; }
.grouped > .sender-line { display: none; }
.message.visitor {
  max-width: 100%; background: var(--accent); color: var(--on-accent);
  border-bottom-right-radius: 6px; white-space: pre-wrap;
}
.message.pending { opacity: 0.7; }
.message.failed { opacity: 0.6; }
.message p, .message ul { margin: 0; }
.message p + p, .message p + ul, .message ul + p, .message ul + ul { margin-top: 8px; }
.message ul { padding-left: 20px; }
.message li + li { margin-top: 2px; }
.message strong { font-weight: 650; }
.message a { color: var(--link); text-decoration: underline; text-underline-offset: 2px; }
.message a:focus-visible { outline: 2px solid var(--link); outline-offset: 1px; border-radius: 2px; }
.delivery { display: flex; gap: 8px; align-items: center; font-size: 12px; color: var(--danger); }
.link-button {
  padding: 0; border: 0; background: none; color: var(--link); font-size: 12px; font-weight: 600;
  text-decoration: underline; cursor: pointer;
}
.link-button:focus-visible { outline: 2px solid var(--link); outline-offset: 2px; border-radius: 2px; }
.typing {
  align-self: flex-start; display: flex; gap: 5px; padding: 14px 16px; background: #fff;
  border: 1px solid var(--line); border-radius: 18px; border-bottom-left-radius: 6px;
}
.dot { width: 7px; height: 7px; border-radius: 50%; background: #98a2b3; animation: bounce 1.2s infinite ease-in-out; }
.dot:nth-child(2) { animation-delay: 0.15s; }
.dot:nth-child(3) { animation-delay: 0.3s; }
@keyframes bounce { 0%, 80%, 100% { transform: translateY(0); opacity: 0.45; } 40% { transform: translateY(-4px); opacity: 1; } }
.status-line {
  align-self: center; max-width: 92%; padding: 6px 14px; border-radius: 999px;
  background: #e9edf3; color: #344054; font-size: 13px; text-align: center;
}
.notice {
  align-self: stretch; padding: 8px 12px; border: 1px solid #fecdca; border-radius: 10px;
  background: #fef3f2; color: var(--danger); font-size: 13px;
}
.composer { display: flex; align-items: flex-end; gap: 8px; padding: 12px; border-top: 1px solid var(--line); background: #fff; }
.input {
  flex: 1; min-width: 0; min-height: 44px; max-height: 132px; margin: 0; padding: 11px 14px;
  border: 1px solid #d0d5dd; border-radius: 12px; outline: none; resize: none;
  background: #fff; color: var(--text); font: inherit; line-height: 1.4;
}
.input::placeholder { color: #98a2b3; }
.input:focus { border-color: var(--accent); box-shadow: 0 0 0 3px var(--ring); }
.send {
  flex: none; width: 44px; height: 44px; padding: 0; border: 0; border-radius: 12px;
  display: grid; place-items: center; background: var(--accent); color: var(--on-accent); cursor: pointer;
}
.send:hover { filter: brightness(1.08); }
.send:focus-visible { outline: 3px solid var(--ring); outline-offset: 2px; }
.send svg { width: 22px; height: 22px; }
.composer-footer { display: flex; gap: 8px; padding: 0 14px; font-size: 12.5px; line-height: 1.35; background: #fff; }
.composer-footer.filled { padding-bottom: 10px; }
.composer-error { color: var(--danger); }
.counter { margin-left: auto; color: var(--muted); }
.counter.over { color: var(--danger); font-weight: 600; }
${ATTACHMENT_CSS}
${CHOICES_CSS}
@media (max-width: 479.98px) {
  .panel { top: 0; right: 0; bottom: 0; left: 0; width: 100%; height: 100%; max-height: none; border-radius: 0; }
  .launcher { right: 16px; bottom: 16px; }
  .message, .outgoing, .incoming { max-width: 90%; }
  /* A comfortable touch target: 44 px, as the send button. */
  .icon-button { width: 44px; height: 44px; }
  /* 16px stops iOS zooming the page when the input takes focus. */
  .input { font-size: 16px; }
  .composer { padding-bottom: calc(12px + env(safe-area-inset-bottom, 0px)); }
}
@media print {
  .root { display: none; }
}
@media (prefers-reduced-motion: reduce) {
  .dot { animation: none; opacity: 0.7; }
  .launcher { transition: none; }
}
`;
}

/** Styles `root` without touching the page's styles or needing `style-src 'unsafe-inline'`. */
export function applyStyles(root: ShadowRoot, theme: Theme, nonce: string | undefined): void {
  const text = css(theme);
  if ('adoptedStyleSheets' in root && typeof CSSStyleSheet !== 'undefined' && 'replaceSync' in CSSStyleSheet.prototype) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(text);
    root.adoptedStyleSheets = [sheet];
    return;
  }
  const style = document.createElement('style');
  if (nonce) style.nonce = nonce;
  style.textContent = text;
  root.append(style);
}

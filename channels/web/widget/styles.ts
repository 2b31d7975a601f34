/**
 * The widget's stylesheet, scoped to its shadow root. It is adopted as a constructable
 * stylesheet, which a page's `style-src` policy does not block; browsers without them get a
 * <style> element carrying the embedding script's nonce. No style attribute is ever written.
 */
import { ATTACHMENT_CSS } from './attachments.js';
import { CHOICES_CSS } from './choices.js';
import type { Palette, Theme } from './theme.js';

const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';

const LIGHT =
  '--bg: #fff; --surface: #f5f6f8; --text: #1d2939; --muted: #475467; --line: #e4e7ec; --field: #7b8494; --danger: #b42318; --bubble: #fff; --chip: #e9edf3; --chip-text: #344054; --code: #e9edf3; --code-text: #1d2939; --name: #344054; --shadow: rgba(16, 24, 40, 0.22);';
const DARK =
  '--bg: #101828; --surface: #0c111d; --text: #f2f4f7; --muted: #98a2b3; --line: #344054; --field: #7b8494; --danger: #fda29b; --bubble: #1d2939; --chip: #1d2939; --chip-text: #d0d5dd; --code: #344054; --code-text: #f2f4f7; --name: #d0d5dd; --shadow: rgba(0, 0, 0, 0.5);';
const palette = (colours: Palette): string =>
  `--accent: ${colours.accent}; --on-accent: ${colours.onAccent}; --link: ${colours.link}; --focus: ${colours.edge};`;

/*
 * What the rules below do that is not obvious (kept out of the stylesheet: every byte in it ships):
 * - `.root` cuts every inheritance (`all: initial`): a page rule matching our host
 *   ("* { text-shadow: … }") beats `:host`, and its inherited properties would flow in.
 * - `[dir='auto']` and `unicode-bidi: plaintext`: each message, name and preview takes the
 *   direction of its own text (Arabic, Hebrew: right to left), whatever the widget's language.
 * - The launcher's 2 px ring in `--focus` keeps its edge ≥ 3:1 on a white page whatever the
 *   accent (a darker shade of a light one, theme.ts); every focus ring inside the panel is ≥ 2 px
 *   in `--focus` (≥ 3:1 on every surface of its palette), or `currentColor` on the header.
 * - Code: `--code` is a background of its own (in the dark palette the bubble's is `--chip`'s).
 * - The log takes focus (to scroll it by keyboard): a ring inside its edge, not the browser's 1 px.
 * - The sender line (who wrote a message, and when) is over the first message of a group only.
 * - A message's state is said in words under it (`.delivery`), at full contrast: never by
 *   fading the bubble.
 * - On a phone: the header keeps clear of the notch (safe-area inset), header buttons are
 *   44 px touch targets, and the input's 16 px font stops iOS zooming in on focus.
 */
function css(theme: Theme): string {
  const light = `${LIGHT} ${palette(theme.light)}`;
  const dark = `${DARK} ${palette(theme.dark)} color-scheme: dark;`;
  return `
:host { all: initial; }
.root { all: initial; ${light} font: 15px/1.45 ${FONT}; color: var(--text); text-align: start; letter-spacing: normal; word-spacing: normal; text-transform: none; text-indent: 0; text-shadow: none; white-space: normal; visibility: visible; direction: ltr; cursor: auto; -webkit-font-smoothing: antialiased;
}
.root[dir='rtl'] { direction: rtl; }
.root.theme-dark { ${dark} }
@media (prefers-color-scheme: dark) { .root.theme-auto { ${dark} } }
[dir='auto'], .content p, .content li { unicode-bidi: plaintext; text-align: start; }
*, *::before, *::after { box-sizing: border-box; }
[hidden] { display: none !important; }
button { font: inherit; margin: 0; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap; border: 0;
}
.launcher { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; width: 60px; height: 60px; padding: 0; border: 0; border-radius: 50%; background: var(--accent); color: var(--on-accent); display: grid; place-items: center; cursor: pointer; box-shadow: 0 0 0 2px var(--focus), 0 8px 24px var(--shadow); transition: transform 0.15s ease, box-shadow 0.15s ease;
}
.launcher:hover { transform: translateY(-2px); }
.launcher:focus-visible { outline: 3px solid var(--focus); outline-offset: 3px; }
.left .launcher, .left .panel, .left .launcher-note, .left .launcher-preview { right: auto; left: 20px; }
.launcher-note, .launcher-preview { position: fixed; right: 20px; bottom: 92px; z-index: 2147483000; max-width: min(300px, calc(100vw - 40px)); padding: 10px 14px; border: 1px solid var(--line); border-radius: 12px; background: var(--bg); color: var(--text); font: inherit; font-size: 14px; text-align: start; box-shadow: 0 8px 24px var(--shadow);
}
.launcher-preview { cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.launcher-preview:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.launcher svg { width: 28px; height: 28px; }
.badge { position: absolute; top: -4px; right: -4px; min-width: 22px; height: 22px; padding: 0 6px; border: 2px solid #fff; border-radius: 11px; background: #d92d20; color: #fff; font-size: 12px; font-weight: 700; line-height: 18px; text-align: center;
}
.panel { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; width: 380px; height: 640px; max-height: calc(100vh - 40px); display: flex; flex-direction: column; overflow: hidden; background: var(--bg); border-radius: 16px; box-shadow: 0 16px 48px var(--shadow), 0 2px 8px var(--shadow); animation: open 0.15s ease-out;
}
@keyframes open { from { opacity: 0; } }
.header { display: flex; align-items: center; gap: 12px; padding: 14px 10px 14px 16px; background: var(--accent); color: var(--on-accent);
}
.avatar { flex: none; width: 38px; height: 38px; border-radius: 50%; display: grid; place-items: center; background: rgba(255, 255, 255, 0.22); border: 1px solid rgba(255, 255, 255, 0.35); font-size: 16px; font-weight: 700;
}
.avatar.teammate { background: var(--on-accent); color: var(--accent); }
.heading { flex: 1; min-width: 0; }
.title { margin: 0; font-size: 16px; font-weight: 650; line-height: 1.25; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.subtitle { margin: 2px 0 0; font-size: 12.5px; line-height: 1.3; overflow-wrap: anywhere; }
.panel:focus { outline: none; }
.icon-button { flex: none; width: 36px; height: 36px; padding: 0; border: 0; border-radius: 10px; display: grid; place-items: center; background: transparent; color: inherit; cursor: pointer;
}
.icon-button:hover { background: rgba(255, 255, 255, 0.18); }
.icon-button:focus-visible { outline: 3px solid currentColor; outline-offset: -3px; }
.confirm { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; padding: 10px 16px; background: var(--chip); color: var(--chip-text); font-size: 13.5px; }
.confirm span { flex: 1 1 180px; }
.confirm button { padding: 6px 12px; border: 1px solid var(--field); border-radius: 8px; background: var(--bg); color: var(--text); cursor: pointer; }
.confirm button.danger { border-color: var(--danger); color: var(--danger); font-weight: 600; }
.confirm button:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.icon-button svg { width: 20px; height: 20px; }
.banner { padding: 8px 16px; font-size: 13px; background: #fffaeb; color: #93370d; border-bottom: 1px solid #fedf89;
}
.connection { padding: 6px 16px; font-size: 13px; text-align: center; background: var(--surface); color: var(--muted);
}
.connection:empty { display: none; }
.log { flex: 1; min-height: 0; overflow-y: auto; overscroll-behavior: contain; display: flex; flex-direction: column; gap: 10px; padding: 18px 16px; background: var(--surface);
}
.log:focus-visible { outline: 3px solid var(--focus); outline-offset: -3px; }
.message { max-width: 85%; padding: 10px 14px; border-radius: 18px; overflow-wrap: anywhere;
}
.incoming { align-self: flex-start; max-width: 85%; display: flex; flex-direction: column; align-items: flex-start; gap: 4px; }
.incoming .message { max-width: 100%; }
.message.assistant { background: var(--bubble); border: 1px solid var(--line); border-end-start-radius: 6px;
}
.message.teammate { border-color: var(--accent); }
.outgoing { align-self: flex-end; max-width: 85%; display: flex; flex-direction: column; align-items: flex-end; gap: 4px; }
.sender-line { display: flex; align-items: center; gap: 6px; min-width: 0; font-size: 12px; line-height: 1.3; color: var(--muted); }
.sender-line .sender-time { margin-inline-start: 0; }
.sender-avatar { flex: none; width: 22px; height: 22px; border-radius: 50%; display: grid; place-items: center; background: var(--accent); color: var(--on-accent); font-size: 11px; font-weight: 700;
}
.sender-avatar.teammate { background: var(--bg); color: var(--link); border: 1.5px solid var(--accent); }
.sender-name { font-weight: 600; color: var(--name); }
.sender-team::before, .sender-time::before { content: '\\00b7'; margin-inline-end: 6px; }
.grouped { margin-top: -6px; }
.grouped > .sender-line { display: none; }
.message.visitor { max-width: 100%; background: var(--accent); color: var(--on-accent); border-end-end-radius: 6px; white-space: pre-wrap;
}
.message.failed { box-shadow: 0 0 0 2px var(--danger); }
.message p, .message ul, .message ol { margin: 0; }
.content > * + * { margin-top: 8px; }
.message ul, .message ol { padding-inline-start: 22px; }
.message em { font-style: italic; }
.message code { padding: 1px 4px; border-radius: 4px; background: var(--code); color: var(--code-text); font: 0.92em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.message pre { margin: 0; padding: 8px 10px; border-radius: 8px; background: var(--code); color: var(--code-text); overflow-x: auto; white-space: pre; }
.message pre code { padding: 0; background: none; font-size: 13px; line-height: 1.45; overflow-wrap: normal; }
.message li + li { margin-top: 2px; }
.message strong { font-weight: 650; }
.message a { color: var(--link); text-decoration: underline; text-underline-offset: 2px; }
.message a:focus-visible { outline: 2px solid var(--link); outline-offset: 1px; border-radius: 2px; }
.delivery { display: flex; gap: 8px; align-items: center; font-size: 12px; color: var(--muted); }
.delivery.failed { color: var(--danger); font-weight: 600; }
.still-working { align-self: flex-start; font-size: 13px; color: var(--muted); }
.retry-turn { align-self: flex-start; margin-top: -4px; }
.link-button { padding: 2px 0; border: 0; background: none; color: var(--link); font-size: 13px; font-weight: 600; text-decoration: underline; cursor: pointer;
}
.link-button:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; border-radius: 2px; }
.typing { align-self: flex-start; display: flex; gap: 5px; padding: 14px 16px; background: var(--bubble); border: 1px solid var(--line); border-radius: 18px; border-end-start-radius: 6px;
}
.dot { width: 7px; height: 7px; border-radius: 50%; background: var(--muted); animation: bounce 1.2s infinite ease-in-out; }
.dot:nth-child(2) { animation-delay: 0.15s; }
.dot:nth-child(3) { animation-delay: 0.3s; }
@keyframes bounce { 0%, 80%, 100% { transform: translateY(0); opacity: 0.45; } 40% { transform: translateY(-4px); opacity: 1; } }
.status-line { align-self: center; max-width: 92%; padding: 6px 14px; border-radius: 999px; background: var(--chip); color: var(--chip-text); font-size: 13px; text-align: center;
}
.notice { align-self: stretch; padding: 8px 12px; border: 1px solid #fecdca; border-radius: 10px; background: var(--bg); color: var(--danger); font-size: 13px;
}
.composer { display: flex; align-items: flex-end; gap: 8px; padding: 12px; border-top: 1px solid var(--line); background: var(--bg); }
.input { flex: 1; min-width: 0; min-height: 44px; max-height: 132px; margin: 0; padding: 11px 14px; border: 1px solid var(--field); border-radius: 12px; outline: none; resize: none; background: var(--bg); color: var(--text); font: inherit; line-height: 1.4;
}
.input::placeholder { color: var(--muted); }
.input:focus { border-color: var(--focus); outline: 2px solid var(--focus); outline-offset: 1px; }
.send { flex: none; width: 44px; height: 44px; padding: 0; border: 0; border-radius: 12px; display: grid; place-items: center; background: var(--accent); color: var(--on-accent); cursor: pointer;
}
.send:hover { filter: brightness(1.08); }
.send:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.send svg { width: 22px; height: 22px; }
.composer-footer { display: flex; gap: 8px; padding: 0 14px; font-size: 12.5px; line-height: 1.35; background: var(--bg); }
.composer-footer.filled { padding-bottom: 10px; }
.composer-error { color: var(--danger); }
.counter { margin-inline-start: auto; color: var(--muted); }
.counter.over { color: var(--danger); font-weight: 600; }
${ATTACHMENT_CSS}
${CHOICES_CSS}
@media (max-width: 479.98px) { .panel, .left .panel { top: 0; right: 0; bottom: 0; left: 0; width: 100%; height: 100%; max-height: none; border-radius: 0; } .launcher { right: 16px; bottom: 16px; } .left .launcher { left: 16px; } .header { padding-top: calc(14px + env(safe-area-inset-top, 0px)); } .message, .outgoing, .incoming { max-width: 90%; } .icon-button { width: 44px; height: 44px; } .input { font-size: 16px; } .composer { padding-bottom: calc(12px + env(safe-area-inset-bottom, 0px)); }
}
@media print { .root { display: none; }
}
@media (prefers-reduced-motion: reduce) { .dot { animation: none; opacity: 0.7; } .launcher { transition: none; } .panel { animation: none; }
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

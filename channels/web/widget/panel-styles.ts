/**
 * The panel's stylesheet (the chat part's, see parts.ts): added to the shadow root's sheet once the
 * part is loaded. Its variables are set by styles.ts (the palettes); the notes on the rules are there.
 */
import { ATTACHMENT_CSS } from './attachments.js';
import { CHOICES_CSS } from './choices.js';

export const PANEL_CSS = `
.panel { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; width: 380px; height: 640px; max-height: calc(100vh - 40px); display: flex; flex-direction: column; overflow: hidden; background: var(--bg); border-radius: 16px; box-shadow: 0 16px 48px var(--shadow), 0 2px 8px var(--shadow); animation: open 0.15s ease-out;
}
@keyframes open { from { opacity: 0; } }
.header { display: flex; align-items: center; gap: 12px; padding: 14px 10px 14px 16px; background: var(--accent); color: var(--on-accent);
}
.avatar { flex: none; width: 38px; height: 38px; border-radius: 50%; display: grid; place-items: center; border: 1.5px solid; font-size: 16px; font-weight: 700;
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
.banner, .waiting-banner { padding: 8px 16px; font-size: 13px; background: #fffaeb; color: #93370d; border-bottom: 1px solid #fedf89;
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
@media (max-width: 479.98px) { .panel, .left .panel { top: 0; right: 0; bottom: 0; left: 0; width: 100%; height: 100%; max-height: none; border-radius: 0; } .header { padding-top: calc(14px + env(safe-area-inset-top, 0px)); } .message, .outgoing, .incoming { max-width: 90%; } .icon-button { width: 44px; height: 44px; } .input { font-size: 16px; } .composer { padding-bottom: calc(12px + env(safe-area-inset-bottom, 0px)); }
}
@media (max-height: 359.98px) { .header { gap: 8px; padding: 4px 6px 4px 12px; } .avatar { display: none; } .title { font-size: 15px; } .subtitle { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; } .icon-button { width: 32px; height: 32px; } .log { padding: 8px 12px; } .composer { gap: 6px; padding: 6px 8px; } .input { min-height: 36px; padding: 7px 10px; } .send { width: 36px; height: 36px; } .composer-footer.filled { padding-bottom: 4px; }
}
@media (prefers-reduced-motion: reduce) { .dot { animation: none; opacity: 0.7; } .panel { animation: none; } }
`;

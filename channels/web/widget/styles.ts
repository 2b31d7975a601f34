/**
 * The widget's stylesheet, scoped to its shadow root. It is adopted as a constructable
 * stylesheet, which a page's `style-src` policy does not block; browsers without them get a
 * <style> element carrying the embedding script's nonce. No style attribute is ever written.
 */
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
.no-launcher .launcher, .no-launcher .launcher-preview, .no-launcher .launcher-note { display: none; }
.badge { position: absolute; top: -4px; right: -4px; min-width: 22px; height: 22px; padding: 0 6px; border: 2px solid #fff; border-radius: 11px; background: #d92d20; color: #fff; font-size: 12px; font-weight: 700; line-height: 18px; text-align: center;
}
@media (max-width: 479.98px) { .launcher { right: 16px; bottom: 16px; } .left .launcher { left: 16px; } }
@media print { .root { display: none; }
}
@media (prefers-reduced-motion: reduce) { .launcher { transition: none; } }
`;
}

/** Styles `root` (with `more`: a loaded part's rules, see panel-styles.ts) without touching the page's styles or needing `style-src 'unsafe-inline'`. */
export function applyStyles(root: ShadowRoot, theme: Theme, nonce: string | undefined, more = ''): void {
  const text = css(theme) + more;
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

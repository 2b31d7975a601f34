/**
 * On a phone, where the open panel covers the page, the panel is a modal dialog: `aria-modal`,
 * everything else on the page `inert` (the body's other children; what the page had made inert
 * itself is left as it was), and Tab and Shift+Tab wrap around inside the panel. Closing puts
 * the page back; the widget returns focus to the launcher.
 */

const FOCUSABLE = 'button, [href], textarea, input, select, [tabindex]:not([tabindex="-1"])';

export interface PageModal {
  /** `panel` is a modal now; undefined: no panel is (closed, or a wider screen). */
  set(panel: HTMLElement | undefined): void;
}

function trapTab(panel: HTMLElement, event: KeyboardEvent): void {
  if (event.key !== 'Tab') return;
  const focusable = Array.from(panel.querySelectorAll<HTMLElement>(FOCUSABLE)).filter(
    (node) => !(node as HTMLButtonElement).disabled && node.getClientRects().length > 0,
  );
  const first = focusable[0];
  const last = focusable[focusable.length - 1];
  if (!first || !last) return;
  const active = (panel.getRootNode() as ShadowRoot).activeElement;
  if (event.shiftKey && (active === first || active === panel)) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && active === last) {
    event.preventDefault();
    first.focus();
  }
}

export function createPageModal(host: HTMLElement): PageModal {
  let current: { panel: HTMLElement; inerted: HTMLElement[]; onKey: (event: KeyboardEvent) => void } | undefined;
  const leave = (): void => {
    if (!current) return;
    for (const node of current.inerted) node.inert = false;
    current.panel.removeEventListener('keydown', current.onKey);
    current.panel.setAttribute('aria-modal', 'false');
    current = undefined;
  };
  return {
    set(panel) {
      if (current?.panel === panel) return;
      leave();
      if (!panel) return;
      const inerted = Array.from(document.body.children).filter((node): node is HTMLElement => node instanceof HTMLElement && node !== host && !node.inert);
      for (const node of inerted) node.inert = true;
      const onKey = (event: KeyboardEvent): void => trapTab(panel, event);
      panel.addEventListener('keydown', onKey);
      panel.setAttribute('aria-modal', 'true');
      current = { panel, inerted, onKey };
    },
  };
}

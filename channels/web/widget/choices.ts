/**
 * A question's answers as buttons under the assistant's message (an action's Confirm / Cancel,
 * the visitor's companies). They are real buttons in a labelled group (Tab reaches them, Enter
 * or Space presses them) inside the log's live region, so a screen reader reads them with the
 * message. A tap sends the button's label as the visitor's message with the choice's id; once
 * one is used, or a newer message makes the question stale, every button of the group is
 * disabled (the one used stays marked, in the accent). They are plain buttons, not toggles.
 */
import { element } from './dom.js';

export interface WidgetChoice {
  id: string;
  label: string;
}

export interface ChoiceGroup {
  readonly element: HTMLElement;
  /** No answer can be chosen any more (used, answered, stale or expired); `chosen`: the one used, marked. */
  disable(chosen?: string): void;
}

/** A question's answers as the service sends them (with a live message or in the history). */
export function parseChoices(value: unknown): WidgetChoice[] | undefined {
  const choices = (Array.isArray(value) ? value : []).flatMap((item: unknown) => {
    const { id, label } = (item ?? {}) as Record<string, unknown>;
    return typeof id === 'string' && typeof label === 'string' ? [{ id, label }] : [];
  });
  return choices.length > 0 ? choices : undefined;
}

export const CHOICES_CSS = `
.choices { display: flex; flex-wrap: wrap; gap: 6px; margin: 6px 0 2px; }
.choices button {
  border: 1px solid var(--focus); background: var(--bg); color: var(--link); border-radius: 16px;
  padding: 5px 12px; cursor: pointer; font-size: 14px;
}
.choices button:hover:not(:disabled) { background: var(--accent); border-color: var(--accent); color: var(--on-accent); }
.choices button:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.choices button:disabled { cursor: default; border-color: var(--muted); color: var(--muted); }
.choices button.chosen { background: var(--accent); border-color: var(--accent); color: var(--on-accent); }
`;

export function createChoiceGroup(choices: readonly WidgetChoice[], label: string, onChoose: (choice: WidgetChoice) => void): ChoiceGroup {
  const buttons = choices.map((choice) => {
    const button = element('button', { text: choice.label, attributes: { type: 'button', 'data-choice': choice.id } });
    button.addEventListener('click', () => {
      if (button.disabled) return;
      disable(choice.id);
      onChoose(choice);
    });
    return button;
  });
  const group = element('div', { className: 'choices', attributes: { role: 'group', 'aria-label': label } }, buttons);
  const disable = (chosen?: string): void => {
    for (const button of buttons) {
      button.disabled = true;
      if (button.dataset.choice === chosen) button.classList.add('chosen');
    }
  };
  return { element: group, disable };
}

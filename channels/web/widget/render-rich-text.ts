/**
 * Turns parsed assistant text into DOM nodes with createElement and textContent only. Message
 * text never reaches innerHTML, an attribute other than a vetted http(s) `href`, or a style.
 */
import { parseRichText, type Inline } from './rich-text.js';

export function renderRichText(text: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  for (const block of parseRichText(text)) {
    if (block.kind === 'paragraph') {
      const paragraph = document.createElement('p');
      block.lines.forEach((line, index) => {
        if (index > 0) paragraph.append(document.createElement('br'));
        appendInline(paragraph, line);
      });
      fragment.append(paragraph);
    } else {
      const list = document.createElement('ul');
      for (const item of block.items) {
        const entry = document.createElement('li');
        appendInline(entry, item);
        list.append(entry);
      }
      fragment.append(list);
    }
  }
  return fragment;
}

function appendInline(parent: HTMLElement, runs: readonly Inline[]): void {
  for (const run of runs) {
    if (run.kind === 'text') {
      parent.append(document.createTextNode(run.text));
    } else if (run.kind === 'bold') {
      const strong = document.createElement('strong');
      appendInline(strong, run.children);
      parent.append(strong);
    } else {
      const link = document.createElement('a');
      link.href = run.href;
      link.target = '_blank';
      link.rel = 'noopener noreferrer';
      link.textContent = run.text;
      parent.append(link);
    }
  }
}

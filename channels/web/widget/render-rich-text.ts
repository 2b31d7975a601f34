/**
 * Turns parsed assistant text into DOM nodes with createElement and textContent only. Message
 * text never reaches innerHTML, an attribute other than a vetted http(s) `href`, or a style.
 */
import { closeOpenMarkers, parseRichText, type Inline } from './rich-text.js';

/** `streaming`: the text is not complete yet, so what it has opened is shown closed. */
export function renderRichText(text: string, streaming = false): DocumentFragment {
  const fragment = document.createDocumentFragment();
  for (const block of parseRichText(streaming ? closeOpenMarkers(text) : text)) {
    if (block.kind === 'codeBlock') {
      // Monospaced and as written (spaces and line breaks kept), scrolling sideways when wide.
      const pre = document.createElement('pre');
      const code = document.createElement('code');
      code.textContent = block.text;
      pre.append(code);
      fragment.append(pre);
    } else if (block.kind === 'heading') {
      // Headings read as a bold line: a chat bubble is no place for the page's outline.
      const paragraph = document.createElement('p');
      const strong = document.createElement('strong');
      appendInline(strong, block.line);
      paragraph.append(strong);
      fragment.append(paragraph);
    } else if (block.kind === 'paragraph') {
      const paragraph = document.createElement('p');
      block.lines.forEach((line, index) => {
        if (index > 0) paragraph.append(document.createElement('br'));
        appendInline(paragraph, line);
      });
      fragment.append(paragraph);
    } else {
      const list = document.createElement(block.kind === 'ordered' ? 'ol' : 'ul');
      if (block.start !== undefined && block.start !== 1) list.setAttribute('start', String(block.start));
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
    } else if (run.kind === 'bold' || run.kind === 'italic') {
      const emphasis = document.createElement(run.kind === 'bold' ? 'strong' : 'em');
      appendInline(emphasis, run.children);
      parent.append(emphasis);
    } else if (run.kind === 'code') {
      const code = document.createElement('code');
      code.textContent = run.text;
      parent.append(code);
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

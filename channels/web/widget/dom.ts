/**
 * Small DOM builders for the widget's own markup: elements with classes, attributes and text
 * children, and the inline SVG icons. Text always goes in as text nodes.
 */

interface ElementOptions {
  className?: string;
  text?: string;
  attributes?: Record<string, string>;
}

export function element<Tag extends keyof HTMLElementTagNameMap>(
  tag: Tag,
  options: ElementOptions = {},
  children: readonly Node[] = [],
): HTMLElementTagNameMap[Tag] {
  const node = document.createElement(tag);
  if (options.className) node.className = options.className;
  if (options.text !== undefined) node.textContent = options.text;
  for (const [name, value] of Object.entries(options.attributes ?? {})) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** Text only screen readers hear. */
export function screenReaderText(text: string): HTMLSpanElement {
  return element('span', { className: 'sr-only', text });
}

const SVG_NAMESPACE = 'http://www.w3.org/2000/svg';

// Stroked 24×24 outlines, drawn in currentColor.
const ICON_PATHS = {
  chat: ['M5 5h14a2 2 0 0 1 2 2v9a2 2 0 0 1-2 2h-8l-5 4v-4H5a2 2 0 0 1-2-2V7a2 2 0 0 1 2-2z', 'M8 10.5h8', 'M8 13.5h5'],
  close: ['M6 6l12 12', 'M18 6L6 18'],
  send: ['M12 19V5', 'M5.5 11.5L12 5l6.5 6.5'],
  compose: ['M12 20h8', 'M16.5 3.5a2.1 2.1 0 0 1 3 3L7 19l-4 1 1-4z'],
  attach: ['M21 11.5l-8.6 8.6a5.5 5.5 0 0 1-7.8-7.8l8.6-8.6a3.7 3.7 0 0 1 5.2 5.2l-8.6 8.6a1.8 1.8 0 0 1-2.6-2.6l7.9-7.9'],
  document: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5', 'M9 13h6', 'M9 17h6'],
} as const;

type IconName = keyof typeof ICON_PATHS;

const ICON_ATTRIBUTES = {
  viewBox: '0 0 24 24',
  fill: 'none',
  stroke: 'currentColor',
  'stroke-width': '2',
  'stroke-linecap': 'round',
  'stroke-linejoin': 'round',
  'aria-hidden': 'true',
  focusable: 'false',
};

export function icon(name: IconName): SVGSVGElement {
  const svg = document.createElementNS(SVG_NAMESPACE, 'svg');
  for (const [attribute, value] of Object.entries(ICON_ATTRIBUTES)) svg.setAttribute(attribute, value);
  for (const data of ICON_PATHS[name]) {
    const path = document.createElementNS(SVG_NAMESPACE, 'path');
    path.setAttribute('d', data);
    svg.append(path);
  }
  return svg;
}

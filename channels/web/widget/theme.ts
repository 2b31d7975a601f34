/**
 * Derives the widget's colours from the site's accent colour: the text colour that reads on
 * it (≥ 4.5:1), a link colour that reads on every surface of the panel (≥ 4.5:1, an assistant's bubble
 * included), and an edge colour (≥ 3:1 against those and the page) for focus rings and the launcher's outline — a light accent (#fab005) gets
 * a darker shade of itself, a dark accent in the dark palette a lighter one. Every coloured
 * foreground (links, answer buttons, their outlines) uses these shades, never the raw accent. Only a
 * validated hex colour ever reaches the stylesheet, so site settings cannot inject CSS.
 */

export interface Palette {
  accent: string;
  onAccent: string;
  link: string;
  edge: string;
}

export interface Theme {
  light: Palette;
  dark: Palette;
}

const DEFAULT_ACCENT = '#2563eb';
const DARK_TEXT = '#101828';
/** The dark palette's panel colour (styles.ts). */
export const DARK_BACKGROUND = '#101828';
/** The dark palette's lightest surface, an assistant's bubble (styles.ts): links and rings must read on it. */
export const DARK_BUBBLE = '#1d2939';
/** The light palette's darkest surface behind a link or a ring (the log, the "New chat?" bar; styles.ts). */
export const LIGHT_SURFACE = '#e9edf3';

type Rgb = [number, number, number];

function parseHex(value: string): Rgb | undefined {
  const match = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(value.trim());
  if (!match?.[1]) return undefined;
  const digits = match[1].length === 3 ? match[1].replace(/./g, (digit) => digit + digit) : match[1];
  return [0, 2, 4].map((offset) => parseInt(digits.slice(offset, offset + 2), 16)) as Rgb;
}

const hex = (rgb: Rgb): string => `#${rgb.map((channel) => Math.round(channel).toString(16).padStart(2, '0')).join('')}`;

function luminance([red, green, blue]: Rgb): number {
  const linear = (channel: number): number => {
    const value = channel / 255;
    return value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue);
}

function contrast(first: Rgb, second: Rgb): number {
  const [lighter, darker] = [luminance(first), luminance(second)].sort((a, b) => b - a) as [number, number];
  return (lighter + 0.05) / (darker + 0.05);
}

/** `color` mixed step by step toward `toward` until it has `ratio` against `against`. */
function shadeFor(color: Rgb, against: Rgb, ratio: number, toward: Rgb): string {
  for (let step = 0; step <= 20; step += 1) {
    const mixed = color.map((channel, index) => channel + ((toward[index] ?? 0) - channel) * (step / 20)) as Rgb;
    if (contrast(mixed, against) >= ratio) return hex(mixed);
  }
  return hex(toward);
}

export function themeFor(accentColor: string | undefined): Theme {
  const rgb = parseHex(accentColor ?? '') ?? (parseHex(DEFAULT_ACCENT) as Rgb);
  const white: Rgb = [255, 255, 255];
  const black: Rgb = [0, 0, 0];
  // Measured against the palette's surface closest to the colour (the hardest to read on).
  const light = parseHex(LIGHT_SURFACE) as Rgb;
  const dark = parseHex(DARK_BUBBLE) as Rgb;
  const accent = hex(rgb);
  // White or the dark text, whichever reads better; black where neither reaches 4.5:1 (a mid-tone accent).
  const [onWhite, onDark] = [contrast(rgb, white), contrast(rgb, parseHex(DARK_TEXT) as Rgb)];
  const onAccent = Math.max(onWhite, onDark) < 4.5 ? '#000000' : onWhite >= onDark ? '#ffffff' : DARK_TEXT;
  return {
    light: { accent, onAccent, link: shadeFor(rgb, light, 4.5, black), edge: shadeFor(rgb, light, 3, black) },
    dark: { accent, onAccent, link: shadeFor(rgb, dark, 4.5, white), edge: shadeFor(rgb, dark, 3, white) },
  };
}

/**
 * Derives the widget's colours from the site's accent colour: the text colour that reads on
 * it, a link colour that reads on white, and a focus ring. Only a validated hex colour ever
 * reaches the stylesheet, so site settings cannot inject CSS.
 */

export interface Theme {
  accent: string;
  onAccent: string;
  link: string;
  ring: string;
}

const DEFAULT_ACCENT = '#2563eb';
const DARK_TEXT = '#101828';
const FALLBACK_LINK = '#1d4ed8';

type Rgb = [number, number, number];

function parseHex(value: string): Rgb | undefined {
  const match = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(value.trim());
  if (!match?.[1]) return undefined;
  const digits = match[1].length === 3 ? match[1].replace(/./g, (digit) => digit + digit) : match[1];
  return [0, 2, 4].map((offset) => parseInt(digits.slice(offset, offset + 2), 16)) as Rgb;
}

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

export function themeFor(accentColor: string | undefined): Theme {
  const rgb = parseHex(accentColor ?? '') ?? (parseHex(DEFAULT_ACCENT) as Rgb);
  const accent = `#${rgb.map((channel) => channel.toString(16).padStart(2, '0')).join('')}`;
  const white: Rgb = [255, 255, 255];
  const onAccent = contrast(rgb, white) >= contrast(rgb, parseHex(DARK_TEXT) as Rgb) ? '#ffffff' : DARK_TEXT;
  return {
    accent,
    onAccent,
    link: contrast(rgb, white) >= 4.5 ? accent : FALLBACK_LINK,
    ring: `rgba(${rgb.join(', ')}, 0.28)`,
  };
}

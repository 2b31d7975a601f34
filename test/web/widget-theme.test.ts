/**
 * The widget's colours from a site's accent: readable text on the accent, a link colour and an
 * edge (focus ring, launcher outline) that read on the panel in both palettes — a light accent
 * gets a darker shade of itself (issue 29) — and nothing but a validated hex colour ever
 * reaching the stylesheet.
 */
import { describe, expect, test } from '@jest/globals';
import { DARK_BACKGROUND, themeFor } from '../../channels/web/widget/theme.js';

function contrast(first: string, second: string): number {
  const luminance = (hex: string): number => {
    const [red, green, blue] = [1, 3, 5].map((index) => parseInt(hex.slice(index, index + 2), 16) / 255) as [number, number, number];
    const linear = (value: number): number => (value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4);
    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue);
  };
  const [lighter, darker] = [luminance(first), luminance(second)].sort((a, b) => b - a) as [number, number];
  return (lighter + 0.05) / (darker + 0.05);
}

describe('themeFor', () => {
  test('a dark accent gets white text and is itself the link and edge colour', () => {
    expect(themeFor('#0B7285').light).toEqual({ accent: '#0b7285', onAccent: '#ffffff', link: '#0b7285', edge: '#0b7285' });
  });

  test.each(['#fab005', '#fcc419', '#ffffff', '#2563eb', '#e8590c'])('accent %s: link ≥ 4.5:1 and edge ≥ 3:1 on both palettes', (accent) => {
    const { light, dark } = themeFor(accent);
    expect(contrast(light.link, '#ffffff')).toBeGreaterThanOrEqual(4.5);
    expect(contrast(light.edge, '#ffffff')).toBeGreaterThanOrEqual(3);
    expect(contrast(dark.link, DARK_BACKGROUND)).toBeGreaterThanOrEqual(4.5);
    expect(contrast(dark.edge, DARK_BACKGROUND)).toBeGreaterThanOrEqual(3);
    expect(contrast(light.onAccent, light.accent)).toBeGreaterThanOrEqual(4.5);
  });

  test('a light accent gets dark text and a darker shade of itself for its edge', () => {
    const { light } = themeFor('#fab005');
    expect(light.onAccent).toBe('#101828');
    expect(light.edge).not.toBe('#fab005');
    expect(contrast('#fab005', '#ffffff')).toBeLessThan(3);
  });

  test('short hex expands; anything that is not a hex colour falls back to the default', () => {
    expect(themeFor('#fff').light.accent).toBe('#ffffff');
    for (const hostile of ['red; } * { display: none', 'url(https://x.example/a.png)', '#12345', '', undefined]) {
      expect(themeFor(hostile).light.accent).toBe('#2563eb');
    }
  });
});

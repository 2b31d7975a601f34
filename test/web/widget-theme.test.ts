/**
 * The widget's colours from a site's accent: readable text on the accent, a link colour that
 * reads on white, and nothing but a validated hex colour ever reaching the stylesheet.
 */
import { describe, expect, test } from '@jest/globals';
import { themeFor } from '../../channels/web/widget/theme.js';

describe('themeFor', () => {
  test('a dark accent gets white text and is itself the link colour', () => {
    expect(themeFor('#0B7285')).toEqual({ accent: '#0b7285', onAccent: '#ffffff', link: '#0b7285', ring: 'rgba(11, 114, 133, 0.28)' });
  });

  test('a light accent gets dark text, and links fall back to a readable blue', () => {
    const theme = themeFor('#fcc419');
    expect(theme.onAccent).toBe('#101828');
    expect(theme.link).toBe('#1d4ed8');
  });

  test('short hex expands; anything that is not a hex colour falls back to the default', () => {
    expect(themeFor('#fff').accent).toBe('#ffffff');
    for (const hostile of ['red; } * { display: none', 'url(https://x.example/a.png)', '#12345', '', undefined]) {
      expect(themeFor(hostile).accent).toBe('#2563eb');
    }
  });
});

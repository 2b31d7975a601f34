/**
 * Keeps the host page from scrolling behind the open panel on small screens, where the panel
 * covers the whole viewport and a swipe would otherwise scroll the page underneath. The body is
 * pinned in place (iOS ignores `overflow: hidden` on it for touch scrolling) and everything the
 * lock changed is put back on release, including where the page was scrolled to. It touches the
 * page only through the CSSOM (no style attribute markup, so a strict `style-src` allows it).
 */

export interface PageScrollLock {
  lock(): void;
  release(): void;
}

const LOCKED_PROPERTIES = ['position', 'top', 'left', 'right', 'width', 'overflow'] as const;

export function createPageScrollLock(): PageScrollLock {
  let saved: { scrollX: number; scrollY: number; body: Record<string, string>; rootOverflow: string } | undefined;

  return {
    lock() {
      if (saved) return;
      const { body, documentElement } = document;
      const previous: Record<string, string> = {};
      for (const property of LOCKED_PROPERTIES) previous[property] = body.style.getPropertyValue(property);
      saved = { scrollX: window.scrollX, scrollY: window.scrollY, body: previous, rootOverflow: documentElement.style.getPropertyValue('overflow') };
      body.style.setProperty('position', 'fixed');
      body.style.setProperty('top', `${-saved.scrollY}px`);
      body.style.setProperty('left', '0');
      body.style.setProperty('right', '0');
      body.style.setProperty('width', '100%');
      body.style.setProperty('overflow', 'hidden');
      documentElement.style.setProperty('overflow', 'hidden');
    },
    release() {
      if (!saved) return;
      const { body, documentElement } = document;
      for (const property of LOCKED_PROPERTIES) {
        const value = saved.body[property];
        if (value) body.style.setProperty(property, value);
        else body.style.removeProperty(property);
      }
      if (saved.rootOverflow) documentElement.style.setProperty('overflow', saved.rootOverflow);
      else documentElement.style.removeProperty('overflow');
      window.scrollTo(saved.scrollX, saved.scrollY);
      saved = undefined;
    },
  };
}

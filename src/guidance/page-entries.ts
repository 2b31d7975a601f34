/**
 * The transcript page's names for guidance entries (its `PageGuidance` port): an entry's
 * category and text from the live version this process holds (no read), else from the draft by
 * `_id` (one read each, at most MAX_READS a page). An entry in neither — removed and never
 * published again — is left out, and the page shows its id alone.
 */
import type { PageGuidance, PageGuidanceEntry } from '../transcripts/page-guidance.js';
import { ENTRY_ID, type PublishedVersion } from './model.js';
import type { GuidanceStore } from './store.js';

const MAX_READS = 50;

export function createPageGuidance(deps: { store: Pick<GuidanceStore, 'draft'>; current: () => PublishedVersion | undefined }): PageGuidance {
  return async (ids) => {
    const known = new Map<string, PageGuidanceEntry>();
    const live = new Map((deps.current()?.entries ?? []).map((entry) => [entry.id, entry]));
    const toRead: string[] = [];
    for (const id of ids) {
      const entry = live.get(id);
      if (entry) known.set(id, { category: entry.category, text: entry.text });
      else if (ENTRY_ID.test(id) && toRead.length < MAX_READS) toRead.push(id);
    }
    const drafts = await Promise.all(toRead.map((id) => deps.store.draft(id)));
    for (const entry of drafts) if (entry) known.set(entry.id, { category: entry.category, text: entry.text });
    return known;
  };
}

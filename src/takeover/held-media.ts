/**
 * What the holder of a conversation gets when its customer sends media while they hold it: the
 * media is prepared as for a turn (fetched once, stored in the media store, a voice note
 * transcribed; `MediaIntake`), never given to a model, and relayed as a few WhatsApp messages:
 *   - a photo or a PDF goes as media (a signed, expiring link to the stored file), captioned
 *     `Customer (photo): <caption>`;
 *   - a voice note as its transcription, `Customer (voice note): …`, then the audio itself
 *     (its own message: WhatsApp shows no caption on audio);
 *   - a file the service refused (too big, a kind it does not take, a failed download) is
 *     announced: `Customer sent a video the service can't forward (not a supported kind).`
 * A caption with nothing forwarded to carry it goes first as `Customer: <caption>`.
 */
import type { MediaReference } from '../media/inbound-media.js';

/** One message to the holder: its text, and at most one media link (WhatsApp carries one per message). */
export interface RelayPiece {
  text: string;
  mediaUrl?: string;
}

const REASONS: Record<string, string> = {
  'too-large': 'too large',
  'unsupported-type': 'not a supported kind',
  'download-failed': 'the download failed',
  'download-timeout': 'the download took too long',
};

/** What a file is, in words, from what was found (or else declared). */
function kindWord(media: Pick<MediaReference, 'kind' | 'contentType'>): string {
  if (media.kind === 'image') return 'photo';
  if (media.kind === 'audio') return 'voice note';
  if (media.kind === 'document') return 'PDF';
  const [type = ''] = media.contentType.toLowerCase().split(';');
  if (type.startsWith('image/')) return 'photo';
  if (type.startsWith('audio/')) return 'voice note';
  if (type.startsWith('video/')) return 'video';
  if (type === 'application/pdf') return 'PDF';
  if (type.includes('vcard') || type.includes('contact')) return 'contact card';
  return 'file';
}

/**
 * The messages relaying one held customer message with media, in order. `link` gives a stored
 * media's signed absolute address; `caption` is what the customer typed with it.
 */
export function relayPieces(caption: string, media: readonly MediaReference[], link: (mediaId: string) => string): RelayPiece[] {
  const text = caption.trim();
  const pieces: RelayPiece[] = [];
  let captioned = false;
  for (const item of media) {
    const word = kindWord(item);
    if (item.id === undefined) {
      const why = item.error ? REASONS[item.error] : undefined;
      pieces.push({ text: `Customer sent ${word === 'file' ? 'a file' : `a ${word}`} the service can't forward${why ? ` (${why})` : ''}.` });
      continue;
    }
    const url = link(item.id);
    if (item.kind === 'audio') {
      const heard =
        item.transcription !== undefined
          ? `Customer (voice note): ${item.transcription}`
          : `Customer (voice note): not transcribed${item.error === 'too-many-voice-notes' ? ' (one voice note per message is)' : ''}, listen below.`;
      pieces.push({ text: heard }, { text: "Customer's voice note (audio)", mediaUrl: url });
      continue;
    }
    const label = item.kind === 'document' && item.filename ? `${word} ${item.filename}` : word;
    pieces.push({ text: `Customer (${label})${!captioned && text ? `: ${text}` : ''}`, mediaUrl: url });
    captioned ||= text !== '';
  }
  if (!captioned && text) pieces.unshift({ text: `Customer: ${text}` });
  return pieces;
}

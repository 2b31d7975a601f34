/**
 * The opt-in chime (`data-sound="on"`, or the script API's `sound(true)`): a short rising tone
 * generated with WebAudio — no audio file, nothing fetched. Browsers let a page play sound only
 * once the visitor has interacted with it: before that the chime stays silent, and a browser
 * that refuses (or has no WebAudio) is never an error.
 */
let context: AudioContext | undefined;

/** Plays the chime; `prime` only starts the audio (called in a click: Safari lets audio started in a gesture play later). */
export function chime(prime?: boolean): void {
  // No user activation yet (or a browser that cannot say): silence, and no console warning.
  if (!navigator.userActivation?.hasBeenActive) return;
  try {
    context ??= new AudioContext();
    void context.resume().catch(() => undefined);
    if (prime) return;
    const start = context.currentTime;
    const tone = context.createOscillator();
    const gain = context.createGain();
    tone.frequency.setValueAtTime(880, start);
    tone.frequency.setValueAtTime(1320, start + 0.1);
    gain.gain.setValueAtTime(0.15, start);
    gain.gain.exponentialRampToValueAtTime(0.001, start + 0.35);
    tone.connect(gain).connect(context.destination);
    tone.start(start);
    tone.stop(start + 0.35);
  } catch {
    // No WebAudio, or refused: the title counter and the preview still say a reply came.
  }
}

/**
 * Voice notes to text: the AI SDK's transcription API with the OpenAI provider (MODEL_TRANSCRIBE),
 * against OpenAI or the configured OpenAI-compatible base URL. One call per voice note, no
 * SDK retries (a failed transcription is answered, not retried: the turn must not wait).
 */
import { createOpenAI } from '@ai-sdk/openai';
import { transcribe } from 'ai';
import { MODEL_TELEMETRY } from '../model/provider.js';

/** Transcribes one audio file; throws when the model fails. */
export type Transcriber = (audio: Uint8Array, options: { signal: AbortSignal }) => Promise<string>;

export function createOpenAITranscriber(settings: { openai: { apiKey: string; baseUrl: string | undefined } | undefined; model: string }): Transcriber {
  const { openai } = settings;
  // Without an OpenAI key a voice note is answered as not understood (the customer is asked to type it).
  if (!openai) return () => Promise.reject(new Error('no OpenAI key (OPENAI_API_KEY) to transcribe voice notes with'));
  const provider = createOpenAI({ apiKey: openai.apiKey, ...(openai.baseUrl ? { baseURL: openai.baseUrl } : {}) });
  const model = provider.transcription(settings.model);
  return async (audio, { signal }) => (await transcribe({ model, audio, abortSignal: signal, maxRetries: 0, telemetry: MODEL_TELEMETRY })).text.trim();
}

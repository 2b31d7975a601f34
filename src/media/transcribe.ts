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

export function createOpenAITranscriber(settings: { apiKey: string; baseUrl: string | undefined; model: string }): Transcriber {
  const provider = createOpenAI({ apiKey: settings.apiKey, ...(settings.baseUrl ? { baseURL: settings.baseUrl } : {}) });
  const model = provider.transcription(settings.model);
  return async (audio, { signal }) => (await transcribe({ model, audio, abortSignal: signal, maxRetries: 0, telemetry: MODEL_TELEMETRY })).text.trim();
}

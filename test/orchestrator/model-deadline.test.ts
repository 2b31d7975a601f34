/**
 * Every model call has a deadline, and the deadline ends with the call. A judge or reply that
 * never answers is given up when its time runs out (the judge's fallback still routes the turn,
 * a reply's failure is the turn's failure: it throws, retryable, for the queue to retry); a call that answered leaves
 * nothing armed behind it — the AI SDK's own `timeout` option kept a timer and a merged signal
 * alive for the whole 20–45 s after every call, which is what grew the worker's heap in the soak.
 */
import { afterEach, expect, test } from '@jest/globals';
import { classifyFailure } from '../../src/errors/index.js';
import { ModelsUnavailableError } from '../../src/orchestrator/failover.js';
import { keywordJudge, type Script } from '../support/deterministic-model.js';
import { createOrchestratorFixture, type OrchestratorFixture } from '../support/orchestrator-fixture.js';

const DEADLINE_MS = 300;
let fixture: OrchestratorFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const conversation = () => `cli:deadline-${Math.random().toString(36).slice(2)}`;
const hangs = { text: 'too late', delayMs: 60_000 };

test('a call that answered leaves no deadline armed: its signal is never aborted after it returned', async () => {
  fixture = await createOrchestratorFixture({ timeoutMs: DEADLINE_MS });
  const result = await fixture.turn(conversation(), 'how much is the Pro plan?');
  expect(result.failed).toBe(false);
  const signals = fixture.models.calls.map((call) => call.options.abortSignal);
  expect(signals).toHaveLength(2);
  // Well past the deadline: a timer left armed by the call would have aborted its signal by now.
  await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS * 2));
  expect(signals.map((signal) => signal?.aborted)).toEqual([false, false]);
});

test('a judge that never answers is given up at its deadline, and the route fallback routes the turn', async () => {
  let judged = 0;
  const judge: Script = (call) => (judged++ === 0 ? hangs : keywordJudge(call));
  fixture = await createOrchestratorFixture({ timeoutMs: DEADLINE_MS, judge });
  const result = await fixture.turn(conversation(), 'where is my invoice 1042?');
  expect(result.failed).toBe(false);
  expect(result.roleId).toBe('bookkeeper');
  expect(result.modelCalls).toBe(2);
  expect(result.text).toBe('Answer to: where is my invoice 1042?');
  expect(fixture.models.calls[0]?.options.abortSignal?.reason).toMatchObject({ name: 'TimeoutError' });
});

test('a reply that never answers fails the turn at its deadline, as a retryable outage (the queue retries the message)', async () => {
  fixture = await createOrchestratorFixture({ timeoutMs: DEADLINE_MS, script: () => hangs });
  const failure = await fixture.turn(conversation(), 'how much is the Pro plan?').catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(ModelsUnavailableError);
  expect(classifyFailure(failure)).toBe('infrastructure');
  expect(fixture.models.replyCalls()[0]?.options.abortSignal?.aborted).toBe(true);
});

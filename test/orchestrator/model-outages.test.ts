/**
 * A provider's outage in the log (a logger capture): one warn line when it goes out, whatever the
 * number of failed or skipped calls, debug lines between, one warn line when it answers two calls in
 * a row (one answer between failures — a judgment while the reply still fails — is no recovery);
 * `active()` while it failed within the last minute.
 */
import { describe, expect, test } from '@jest/globals';
import { createLogger } from '../../src/logger.js';
import { createModelOutages } from '../../src/orchestrator/model-outages.js';

function rig() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'debug', sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  let clock = 1_000_000;
  const outages = createModelOutages(() => clock);
  const loud = () => lines.filter((line) => line.level !== 'debug').map((line) => [line.event, line.provider]);
  return { lines, logger, outages, loud, advance: (ms: number) => (clock += ms) };
}

const dns = Object.assign(new Error('Failed after 2 attempts'), {
  lastError: new Error('Cannot connect to API', { cause: new Error('getaddrinfo ENOTFOUND api.openai.com') }),
});

describe('model outages in the log', () => {
  test('one line out (with the root cause), one line back, however many calls failed between', () => {
    const { lines, logger, outages, loud, advance } = rig();
    for (let call = 0; call < 40; call += 1) {
      outages.failed(logger, 'openai', dns);
      outages.skipped(logger, 'openai');
      advance(1_000);
    }
    outages.answered(logger, 'openai');
    outages.answered(logger, 'openai');
    expect(loud()).toEqual([
      ['model-outage', 'openai'],
      ['model-recovered', 'openai'],
    ]);
    expect(lines[0]).toMatchObject({ level: 'warn', cause: 'getaddrinfo ENOTFOUND api.openai.com' });
    expect(lines.at(-1)).toMatchObject({ level: 'warn', outageMs: 40_000, failedCalls: 80 });
  });

  test('an answer between failures is no recovery; a provider never seen failing logs nothing when it answers', () => {
    const { logger, outages, loud } = rig();
    outages.answered(logger, 'anthropic');
    for (let turn = 0; turn < 5; turn += 1) {
      outages.answered(logger, 'openai');
      outages.failed(logger, 'openai', dns);
    }
    expect(loud()).toEqual([['model-outage', 'openai']]);
  });

  test('active while a provider failed within the last minute', () => {
    const { logger, outages, advance } = rig();
    expect(outages.active()).toBe(false);
    outages.skipped(logger, 'local');
    expect(outages.active()).toBe(true);
    advance(60_000);
    expect(outages.active()).toBe(false);
  });
});

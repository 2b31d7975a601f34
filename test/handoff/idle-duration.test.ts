/**
 * How the idle hand-back note to a teammate says how long they were quiet: "1 minute", never
 * "1 minutes"; under a minute in seconds, never "0 minutes".
 */
import { expect, test } from '@jest/globals';
import { idleDuration } from '../../src/takeover/handed-back.js';

test.each([
  [1, '1 minute'],
  [30, '30 minutes'],
  [1.5, '1.5 minutes'],
  [0.5, '30 seconds'],
  [0.02, '1 second'],
  [0.001, '1 second'],
])('%p minutes reads "%s"', (minutes, text) => {
  expect(idleDuration(minutes)).toBe(text);
});

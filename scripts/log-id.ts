/**
 * `npm run log-id -- <conversation key | number | e-mail> …`: the opaque id that stands for each
 * person in the service's logs (see docs/observability.md), computed with the service's
 * configuration (`LOG_ID_SECRET`, or the secret it is derived from). One line per argument:
 * the id, a tab, the argument. Exits 2 without an argument, 1 when the configuration is invalid.
 *
 *   node --env-file-if-exists=.env --import tsx scripts/log-id.ts whatsapp:+34600111222
 */
import { loadConfig } from '../src/config.js';
import { logIdOf } from '../src/logger-privacy.js';

const USAGE = 'usage: npm run log-id -- <conversation key | number | e-mail> ...\n';

function main(values: readonly string[]): number {
  if (values.length === 0 || values.some((value) => value.trim() === '')) {
    process.stderr.write(USAGE);
    return 2;
  }
  let logIdSecret: string;
  try {
    ({ logIdSecret } = loadConfig());
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  for (const value of values) process.stdout.write(`${logIdOf(value, logIdSecret)}\t${value}\n`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));

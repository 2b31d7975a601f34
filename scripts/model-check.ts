/**
 * `scripts/start.sh`'s model check: asks each configured model provider once (the service's own
 * start-up check, `src/model/provider-check.ts`) and prints what is wrong, one line each —
 * `PROBLEM: …` for a refused key or model, `note: …` for a provider that did not answer or can't
 * be checked. Prints nothing when every provider is fine.
 */
import { loadConfig } from '../src/config.js';
import { checkProviders } from '../src/model/provider-check.js';

for (const result of await checkProviders(loadConfig().model)) {
  if (result.state !== 'ok') process.stdout.write(`${result.state === 'refused' ? 'PROBLEM' : 'note'}: ${result.problem}\n`);
}

/**
 * `npm run people -- export <id>` prints a person's data as one JSON document; `npm run people --
 * erase <id>` removes it from every store and prints the erasure's record (docs/privacy.md). The
 * id is a WhatsApp number, `user:<external id>`, an e-mail or `web:<site key>:<visitor id>`. Runs
 * with the service's configuration (MONGODB_URI, REDIS_URL or REDIS_CLUSTER_NODES). Exits 0 when
 * done, 1 on a failure (logged), 2 on a usage error or an id of no accepted form.
 */
import { loadConfig } from '../src/config.js';
import { createContactsFeature } from '../src/contacts/feature.js';
import { createInfrastructure } from '../src/infrastructure.js';
import { createLogger } from '../src/logger.js';
import { createMediaStore } from '../src/media/media-store.js';
import { createPeopleFeature } from '../src/people/feature.js';
import { PERSON_ID_FORMS } from '../src/people/person-id.js';
import { createSignedLinks } from '../src/transcripts/feature.js';

const USAGE = 'usage: npm run people -- export <id> | erase <id>\n';

async function main(command: string | undefined, id: string | undefined): Promise<number> {
  if ((command !== 'export' && command !== 'erase') || !id) {
    process.stderr.write(USAGE);
    return 2;
  }
  const config = loadConfig();
  const { infra, close } = await createInfrastructure(config, {
    logger: createLogger({ level: config.logLevel, sink: (line) => process.stderr.write(`${line}\n`) }),
  });
  const contacts = await createContactsFeature(infra, config);
  const { links, revocations } = createSignedLinks(infra, config);
  const media = createMediaStore(infra.mongo, { maxBytes: config.media.maxBytes });
  const { people } = createPeopleFeature(infra, config, { contacts, media, links, revocations });
  try {
    const result = command === 'export' ? await people.export(id) : await people.erase(id, 'cli');
    if (!result) {
      process.stderr.write(`invalid person id: ${PERSON_ID_FORMS}\n`);
      return 2;
    }
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    infra.logger.error('people-command-failed', { command, error });
    return 1;
  } finally {
    contacts.close();
    await close();
  }
}

process.exitCode = await main(process.argv[2], process.argv[3]);

/**
 * Linked customers as a feature: the contact store in MongoDB behind the caller index in Redis
 * (`identify` is one Redis read), started before the service answers.
 */
import { createHmac } from 'node:crypto';
import type { Config } from '../config.js';
import type { Infrastructure } from '../infrastructure.js';
import { createContactIndex } from './contact-index.js';
import { createContactStore } from './contact-store.js';

export async function createContactsFeature(infra: Infrastructure, config: Pick<Config, 'transcriptLinks'>) {
  const secret = createHmac('sha256', config.transcriptLinks.secret).update('people-keys').digest('hex');
  const contacts = createContactIndex(createContactStore(infra.mongo), { redis: infra.redis, logger: infra.logger, metrics: infra.metrics, secret });
  infra.mongoLink.whenConnected('contact indexes', () => contacts.ensureIndexes());
  await contacts.start();
  return contacts;
}

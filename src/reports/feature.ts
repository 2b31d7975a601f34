/** The reports feature built from the shared infrastructure (the composition root's one call). */
import type { Config } from '../config.js';
import { createCsatReport } from '../csat/csat-report.js';
import type { Infrastructure } from '../infrastructure.js';
import { createReportsFeature, type ReportsFeature } from './index.js';

export function reportsFeatureOf(
  infra: Infrastructure,
  config: Pick<Config, 'adminToken' | 'publicBaseUrl' | 'model'>,
  channels: () => readonly string[],
): ReportsFeature {
  const { mongo: connection, redis, logger, metrics } = infra;
  const settings = { adminToken: config.adminToken, publicBaseUrl: config.publicBaseUrl, channels, prices: config.model.prices };
  return createReportsFeature({ connection, redis, logger, metrics, config: settings, csat: createCsatReport(connection) });
}

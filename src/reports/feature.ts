/** The reports feature built from the shared infrastructure (the composition root's one call). */
import type { Config } from '../config.js';
import { parseTeams } from '../handoff/teams.js';
import type { Infrastructure } from '../infrastructure.js';
import { createTranscriptLinks } from '../transcripts/transcript-link.js';
import { createReportsFeature, type ReportsFeature } from './index.js';
import { createSatisfaction } from './satisfaction.js';

export function reportsFeatureOf(
  infra: Infrastructure,
  config: Pick<Config, 'adminToken' | 'publicBaseUrl' | 'model' | 'transcriptLinks' | 'handoff' | 'reports'>,
  channels: () => readonly string[],
): ReportsFeature {
  const { mongo: connection, redis, logger, metrics } = infra;
  const settings = { adminToken: config.adminToken, publicBaseUrl: config.publicBaseUrl, channels, prices: config.model.prices };
  // A comment links to its conversation's transcript page (the links a hand-off notice carries).
  const links = createTranscriptLinks({ ...config.transcriptLinks, publicBaseUrl: config.publicBaseUrl });
  const csat = createSatisfaction(connection, (conversationId) => links.url(conversationId));
  // The teams' opening hours: the first reply within them.
  const teams = parseTeams(config.handoff.teamsJson);
  const teamHours = (team: string) => (team === 'sales' || team === 'support' ? teams[team]?.hours : undefined);
  return createReportsFeature({
    connection,
    redis,
    logger,
    metrics,
    config: settings,
    csat,
    // A waiting hand-off links to its conversation too.
    transcriptLink: (conversationId) => links.url(conversationId),
    teamHours,
    timeZone: config.reports.timeZone,
  });
}

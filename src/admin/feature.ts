/**
 * The operators' surfaces as a feature: the admin API (contacts, hand-offs and takeover, confirmed
 * actions, model usage) and the queue dashboard, both behind ADMIN_TOKEN (off without it).
 */
import type { Router } from 'express';
import type { Config } from '../config.js';
import type { Infrastructure } from '../infrastructure.js';
import { createAdminRouter, type AdminRouterOptions } from './admin-router.js';
import { createQueueDashboard, type QueueDashboardOptions } from './queue-dashboard.js';

export function createAdminFeature(
  infra: Infrastructure,
  config: Pick<Config, 'adminToken'>,
  deps: Pick<AdminRouterOptions, 'contacts' | 'handoffs' | 'takeover' | 'usage' | 'actions'> & Pick<QueueDashboardOptions, 'queues'>,
): Router[] {
  const { logger, metrics } = infra;
  const { queues, ...admin } = deps;
  return [
    createAdminRouter({ adminToken: config.adminToken, ...admin, logger, metrics }),
    createQueueDashboard({ adminToken: config.adminToken, queues, logger, metrics }),
  ];
}

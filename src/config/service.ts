/** The service itself: its environment, port, public URL, proxies and logs; the business's name; the operator's admin API and metrics. */
import { isIP } from 'node:net';
import { z } from 'zod';
import { httpUrl } from './fields.js';

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, a CIDR subnet, or one of Express's names for address ranges. */
function isProxyRange(value: string): boolean {
  if (PROXY_RANGE_NAMES.has(value)) return true;
  const [address = '', prefix, ...rest] = value.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/**
 * Which proxies' X-Forwarded-* headers to believe, as Express's `trust proxy` takes it: none,
 * a hop count, or the proxies' addresses. `true` means one hop (the nearest proxy), never
 * "trust every hop", which would take the client-written leftmost X-Forwarded-For as its IP.
 */
const trustProxySetting = z.string().transform((raw, context): TrustProxy => {
  const value = raw.trim().toLowerCase();
  if (['false', 'no', '0'].includes(value)) return false;
  if (['true', 'yes'].includes(value)) return 1;
  if (/^\d{1,2}$/.test(value)) return Number(value);
  const ranges = value.split(',').map((item) => item.trim());
  if (ranges.every(isProxyRange)) return ranges;
  context.addIssue({
    code: 'custom',
    message: 'expected false, a hop count (true means 1), or a comma-separated list of proxy addresses or subnets, e.g. 10.0.0.0/8,loopback',
  });
  return z.NEVER;
});

/** `false`, the number of proxy hops in front of the service, or the proxies' addresses and subnets. */
export type TrustProxy = false | number | string[];

export const serviceFields = {
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number({ error: 'expected a port number' }).int().min(0).max(65535).default(3000),
  PUBLIC_BASE_URL: httpUrl.describe('the public URL Twilio calls, e.g. https://assistant.example.com'),
  TRUST_PROXY: trustProxySetting.default(false),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  LOG_PERSON_IDS: z
    .enum(['opaque', 'plain'])
    .default('opaque')
    .describe('opaque: log lines name a person (number, widget visitor, e-mail, user id) by a keyed hash; plain: as they are'),
};

export const businessFields = {
  BUSINESS_NAME: z.string().min(1).max(80).default('our business'),
};

export const operatorFields = {
  ADMIN_TOKEN: z.string().min(24, 'expected at least 24 characters').optional(),
  METRICS_PORT: z.coerce.number({ error: 'expected a port number' }).int().min(0).max(65535).optional(),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  METRICS_TOKEN: z.string().min(24, 'expected at least 24 characters').optional(),
};

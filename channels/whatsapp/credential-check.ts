/**
 * The Twilio credentials checked once at start, in the background (a process never waits on it):
 * one authenticated read of the account (`GET /2010-04-01/Accounts/<sid>.json`). Refused (401,
 * 403, 404) is one error line naming the variables to fix and the `whatsapp` readiness check
 * reports `degraded` from then on; Twilio not reached (a name that does not resolve, no answer)
 * is one warning saying so — replies would fail the same way until it can be reached.
 */
import { errorField, errorStatus, errorText } from '../../src/errors/index.js';
import type { Logger } from '../../src/logger.js';
import { createTwilioClient } from './twilio-client.js';

export type TwilioCheckState = 'ok' | 'refused' | 'unreachable';

export interface TwilioCheckResult {
  state: TwilioCheckState;
  /** What is wrong, in words (empty when ok). */
  problem: string;
  status?: number;
}

export interface TwilioCheckSettings {
  accountSid: string;
  authToken: string;
  apiBaseUrl: string | undefined;
}

/** Where the check went, for a line a user reads: the configured base URL, or Twilio's API. */
const whereOf = (settings: TwilioCheckSettings) => settings.apiBaseUrl ?? 'api.twilio.com';

/** The system error code (ENOTFOUND, ECONNREFUSED…) under a failed request, if any. */
function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth += 1) {
    const code = errorField(current, 'code');
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
    current = errorField(current, 'cause');
  }
  return undefined;
}

/** Asks Twilio once whether the account's SID and auth token are accepted; never throws. */
async function checkTwilio(settings: TwilioCheckSettings): Promise<TwilioCheckResult> {
  const client = createTwilioClient(settings);
  try {
    await client.api.v2010.accounts(settings.accountSid).fetch();
    return { state: 'ok', problem: '' };
  } catch (error) {
    const status = errorStatus(error);
    if (status === 401 || status === 403 || status === 404) {
      return {
        state: 'refused',
        problem: `Twilio refused TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN (${status}): set the account's SID and auth token from the Twilio console`,
        status,
      };
    }
    if (status !== undefined) return { state: 'unreachable', problem: `Twilio answered ${status} at ${whereOf(settings)}: ${errorText(error)}`, status };
    const code = networkCode(error);
    return {
      state: 'unreachable',
      problem: `could not reach Twilio at ${whereOf(settings)} (${code ?? errorText(error)}): WhatsApp replies fail until it can be reached`,
    };
  }
}

export interface TwilioCheck {
  /** Settles once Twilio answered (or not). */
  done: Promise<TwilioCheckResult>;
  /** For `/readyz`: fails (degraded) once Twilio refused the credentials; fine while the check runs. */
  readiness: { name: 'whatsapp'; check(): Promise<void>; degradable: true };
}

/** Starts the check in the background: a refusal is one error line, Twilio not reached a warning. */
export function startTwilioCheck(settings: TwilioCheckSettings, logger: Logger): TwilioCheck {
  let refused: TwilioCheckResult | undefined;
  const done = checkTwilio(settings).then((result) => {
    const fields = { problem: result.problem, ...(result.status === undefined ? {} : { status: result.status }) };
    if (result.state === 'refused') logger.error('twilio-credentials-refused', { variables: ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN'], ...fields });
    else if (result.state === 'unreachable') logger.warn('twilio-unreachable', fields);
    else logger.info('twilio-credentials-ok');
    if (result.state === 'refused') refused = result;
    return result;
  });
  return {
    done,
    readiness: {
      name: 'whatsapp',
      degradable: true,
      check: async () => {
        if (refused) throw new Error(refused.problem);
      },
    },
  };
}

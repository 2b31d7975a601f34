/**
 * The orchestrator's guidance hook (src/guidance/): the business's own instructions, in words,
 * quoted in the routed role's prompt below the service's rules. The judge's one call is also
 * asked which escalation entries apply to the latest message (`judged`); the hook then gives the
 * section for the routed role, the entries it quotes, those the judge found applying, and the
 * team an applying escalation entry hands the conversation to. In-process: no I/O, no model call.
 */
import type { LinkedCustomer } from '../contracts/tool.js';

/** Where the turn is answered and who the service verified is talking (`identify`'s contact). */
export interface GuidanceAudience {
  channel: string;
  site: string | undefined;
  contact: LinkedCustomer | undefined;
}

/** An escalation entry as the judge reads it. */
export interface JudgedEntry {
  id: string;
  line: string;
}

export interface GuidedLeg {
  /** The prompt section (undefined: no entry in scope). */
  section: string | undefined;
  /** The entries quoted in it. */
  entries: string[];
  /** The escalation entries the judge found applying, within the routed role's scope. */
  applied: string[];
  /** The first applying escalation entry's team, the channel tool that hands over to it, and the reason the team is told. */
  handOver?: { team: string; entry: string; tool: string; reason: string };
}

export interface TurnGuidance {
  /** Escalation entries naming a team, in scope for this channel, site and contact (any role). */
  judged(audience: GuidanceAudience): readonly JudgedEntry[];
  brief(audience: GuidanceAudience & { roleId: string; applying: readonly string[] }): GuidedLeg;
}

/** The routed role's guidance; a failure leaves it out (logged), never fails the turn. */
export function guideLeg(
  hook: TurnGuidance | undefined,
  audience: GuidanceAudience | undefined,
  roleId: string,
  applying: readonly string[] | undefined,
  warn: (event: string, fields: Record<string, unknown>) => void,
): GuidedLeg | undefined {
  if (!hook || !audience) return undefined;
  try {
    return hook.brief({ ...audience, roleId, applying: applying ?? [] });
  } catch (error) {
    warn('guidance-brief-failed', { roleId, error });
    return undefined;
  }
}

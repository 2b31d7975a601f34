/** The business's guidance (src/guidance/): its budgets and how often each process checks its live version. */
import { z } from 'zod';
import { positiveInt } from './fields.js';

export const guidanceFields = {
  // The most tokens (about 4 characters each) of guidance a role's prompt quotes in one turn; publishing refuses a set that could exceed it.
  GUIDANCE_PROMPT_TOKENS: positiveInt(1500),
  // The most tokens the judge reads of escalation entries naming a team, per channel and site; publishing refuses a set over it.
  GUIDANCE_JUDGE_TOKENS: positiveInt(400),
  // How often each process compares its live version with MongoDB's newest (a publish reaches it within seconds anyway).
  // Publishing first runs every scenario simulated so far against the draft, and is refused unless all pass.
  GUIDANCE_PUBLISH_REQUIRES_PASS: z.stringbool({ error: 'expected true or false' }).default(false),
  GUIDANCE_CHECK_SECONDS: z.coerce.number({ error: 'expected 1–3600 seconds' }).int().min(1).max(3600).default(30),
};

export interface GuidanceConfig {
  promptTokens: number;
  judgeTokens: number;
  checkEveryMs: number;
  /** Publishing requires every scenario simulated so far to pass against the draft. */
  publishRequiresPass: boolean;
}

type GuidanceEnv = z.infer<z.ZodObject<typeof guidanceFields>>;

export const guidanceConfig = (env: GuidanceEnv): GuidanceConfig => ({
  promptTokens: env.GUIDANCE_PROMPT_TOKENS,
  judgeTokens: env.GUIDANCE_JUDGE_TOKENS,
  checkEveryMs: env.GUIDANCE_CHECK_SECONDS * 1000,
  publishRequiresPass: env.GUIDANCE_PUBLISH_REQUIRES_PASS,
});

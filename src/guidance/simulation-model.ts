/**
 * What a simulation is: a scenario (who the customer is, what they want and how they behave, in
 * words, and the success criteria), and its result (the conversation, each criterion's verdict
 * with its reason, and which verdicts flipped since the scenario's previous run). Results are
 * kept in MongoDB by `_id`: each run's own in `guidance_simulations` (`sim_…`), and each
 * scenario's latest in `guidance_simulation_latest` (`<sha-256 of its name>`), which the next run
 * compares with and a publish that requires passing scenarios runs again.
 */
import { createHash } from 'node:crypto';
import type { Connection, mongo } from 'mongoose';
import { z } from 'zod';
import type { ProposedWrite, SimulatedHandoff } from './simulation-tools.js';

export const ScenarioSchema = z.strictObject({
  name: z.string().trim().min(1).max(120),
  /** The channel the customer writes on (its prompt fragment; never its sends or tools). */
  channel: z.string().trim().min(1).max(40).default('web'),
  site: z.string().trim().min(1).max(80).optional(),
  language: z.string().trim().min(2).max(10).optional(),
  /**
   * Who the customer is: verified (as `identify` would give; default), or not (`verified: false`:
   * an anonymous caller whose name is only a claimed display name, as a WhatsApp profile name is);
   * absent: an anonymous one. Only a verified contact's ids reach a tool call.
   */
  contact: z
    .strictObject({
      verified: z.boolean().default(true),
      name: z.string().trim().min(1).max(120),
      email: z.email().optional(),
      customerId: z.string().trim().min(1).max(128).optional(),
      entities: z
        .array(z.strictObject({ id: z.string().trim().min(1).max(64), name: z.string().trim().min(1).max(120) }))
        .max(20)
        .default([]),
    })
    .optional(),
  /** Who the customer is, what they want and how they behave, in words. */
  persona: z.string().trim().min(10).max(2_000),
  criteria: z.array(z.string().trim().min(3).max(300)).min(1).max(10),
  maxTurns: z.number().int().min(1).max(8).default(4),
  /** Whether the assistant may call the MCP server's reads (the real server, bound to this customer); writes are only ever proposed. */
  mcpReads: z.boolean().default(false),
});
export type Scenario = z.infer<typeof ScenarioSchema>;

export const RunBodySchema = z.strictObject({
  scenarios: z.array(ScenarioSchema).min(1).max(10),
  /** Which guidance the assistant follows: the draft (default) or the live version. */
  against: z.enum(['draft', 'published']).default('draft'),
});

export interface Verdict {
  criterion: string;
  passed: boolean;
  reason: string;
}

export interface SimulationResult {
  id: string;
  scenario: Scenario;
  against: 'draft' | 'published';
  /** The live version it ran against (`published`), or 0. */
  version: number;
  /** The conversation; `service` lines say what the service did meanwhile (a write proposed, a hand-off it would make). */
  conversation: { from: 'customer' | 'assistant' | 'service'; text: string }[];
  /** The writes the assistant proposed: recorded, never run. */
  proposed: ProposedWrite[];
  /** The hand-offs the conversation would have made: no team was told. */
  handoffs: SimulatedHandoff[];
  verdicts: Verdict[];
  passed: boolean;
  /** The criteria whose verdict differs from the scenario's previous run. */
  flipped: string[];
  ranAt: string;
}

type Stored = Omit<SimulationResult, 'id'> & { _id: string };

export function createSimulationStore(connection: Connection) {
  const collection = () => connection.collection<Stored>('guidance_simulations') as unknown as mongo.Collection<Stored>;
  const latestOnes = () => connection.collection<Stored>('guidance_simulation_latest') as unknown as mongo.Collection<Stored>;
  const latestId = (name: string) => createHash('sha256').update(name).digest('hex');
  return {
    async previous(name: string): Promise<SimulationResult | undefined> {
      const found = await latestOnes().findOne({ _id: latestId(name) });
      if (!found) return undefined;
      const { _id, ...rest } = found;
      return { ...rest, id: _id };
    },
    /** Every scenario simulated so far (its latest run's). */
    async scenarios(): Promise<Scenario[]> {
      return (await latestOnes().find({}).toArray()).map((found) => found.scenario);
    },
    async keep(result: SimulationResult): Promise<void> {
      const { id, ...rest } = result;
      const latest = latestId(result.scenario.name);
      await collection().replaceOne({ _id: id }, rest, { upsert: true });
      await latestOnes().replaceOne({ _id: latest }, rest, { upsert: true });
    },
  };
}

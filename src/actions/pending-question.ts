/** What a write's pending question carries: the proposed action's id (a confirmation), or a partly frozen call (an enum question). */
import { z } from 'zod';
import { LANGUAGES } from '../words/language.js';

const ConfirmationPendingSchema = z.object({ actionId: z.string().min(1), language: z.enum(LANGUAGES).optional() });
/** A question for one of the write's enum arguments, asked before anything is proposed: the partly frozen call it completes. */
const ChoicePendingSchema = z.object({
  choice: z.object({
    id: z.string().min(1),
    argument: z.string().min(1),
    options: z.array(z.object({ value: z.string(), label: z.string() })).min(1),
    /** The arguments so far (scoped ones bound to the verified caller who was asked). */
    args: z.record(z.string(), z.unknown()),
    language: z.enum(LANGUAGES),
    askedBy: z.object({ address: z.string(), customerId: z.string().optional(), entityId: z.string().optional() }),
    expiresAt: z.iso.datetime(),
  }),
});
export const PendingSchema = z.union([ConfirmationPendingSchema, ChoicePendingSchema]);
export type ChoicePending = z.infer<typeof ChoicePendingSchema>['choice'];

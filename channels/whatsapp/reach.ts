/**
 * A WhatsApp number reaches the customer: a team contacts them there, so a hand-off needs no
 * other contact. The hand-off tools take this from the channel; `src/handoff/` knows no channel.
 */
import type { CustomerReach } from '../../src/handoff/handoff-tools.js';

export const whatsappReach: CustomerReach = {
  contactOf: (address) => ({ whatsapp: address }),
  phrase: 'here on WhatsApp',
};

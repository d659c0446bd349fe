import { tool } from 'ai';
import { z } from 'zod';
import { rewardsApi } from '../../lib/rewards-api';

export const apply_referral_code = tool({
  description:
    'Attach a friend\'s referral code to the signed-in student so both get the referral reward ' +
    'after the first package purchase. The code goes in `referralCode` (9 characters, e.g. "LOOP-7KQ2").',
  parameters: z
    .object({
      referralCode: z.string().length(9).describe('Referral code from the friend\'s invite link'),
    })
    .strict()
    .describe('Referral code to apply'),
  execute: async ({ referralCode }) => rewardsApi.applyCode(referralCode),
});

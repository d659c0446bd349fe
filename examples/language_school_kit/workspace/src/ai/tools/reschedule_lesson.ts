import { tool } from 'ai';
import { z } from 'zod';
import { lessonsApi } from '../../lib/lessons-api';

export const reschedule_lesson = tool({
  description:
    'Move a booked lesson to another free slot in the same tutor\'s calendar. ' +
    'Takes the lesson reference `lessonId` and the new start as `newStartsAt` (ISO 8601, UTC). ' +
    'Fails if the lesson was already rescheduled twice.',
  parameters: z
    .object({
      lessonId: z.string().describe('Lesson reference, e.g. "LL-40917"'),
      newStartsAt: z.string().datetime().describe('New lesson start, ISO 8601, UTC'),
    })
    .strict()
    .describe('Lesson and its new time'),
  execute: async ({ lessonId, newStartsAt }) => lessonsApi.reschedule(lessonId, newStartsAt),
});

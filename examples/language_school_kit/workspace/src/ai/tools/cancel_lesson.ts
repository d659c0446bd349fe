import { tool } from 'ai';
import { z } from 'zod';
import { lessonsApi } from '../../lib/lessons-api';

export const cancel_lesson = tool({
  description:
    'Cancel a booked lesson. `lessonId` is the lesson reference (starts with "LL-"). ' +
    '`reason` must be one of: student_request, tutor_unavailable, technical_issue. ' +
    'Use student_request when the student asks to cancel.',
  parameters: z
    .object({
      lessonId: z.string().regex(/^LL-\d{5}$/).describe('Lesson reference, e.g. "LL-40917"'),
      reason: z.enum(['student_request', 'tutor_unavailable', 'technical_issue']).describe('Why the lesson is cancelled'),
    })
    .strict()
    .describe('Lesson to cancel'),
  execute: async ({ lessonId, reason }) => lessonsApi.cancel(lessonId, reason),
});

import { tool } from 'ai';
import { z } from 'zod';
import { lessonsApi } from '../../lib/lessons-api';

export const book_lesson = tool({
  description:
    'Book a one-to-one lesson for the signed-in student with a tutor. ' +
    'Pass the tutor as `tutorId` (the id shown on the tutor profile, e.g. "tu_8f21k"), ' +
    'the start time as an ISO 8601 string in UTC and the length in minutes (25, 50 or 80). ' +
    'Credits are taken from the student balance when the booking is confirmed.',
  parameters: z
    .object({
      tutorId: z.string().describe('Tutor id from the tutor profile, e.g. "tu_8f21k"'),
      startsAt: z.string().datetime().describe('Lesson start, ISO 8601, UTC'),
      lengthMinutes: z.union([z.literal(25), z.literal(50), z.literal(80)]).describe('Lesson length'),
    })
    .strict()
    .describe('Lesson to book'),
  execute: async ({ tutorId, startsAt, lengthMinutes }) => {
    return lessonsApi.book({ tutorId, startsAt, lengthMinutes });
  },
});

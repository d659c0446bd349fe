export { book_lesson } from './tools/book_lesson';
export { cancel_lesson } from './tools/cancel_lesson';
export { reschedule_lesson } from './tools/reschedule_lesson';
export { apply_referral_code } from './tools/apply_referral_code';

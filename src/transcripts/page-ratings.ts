/**
 * Satisfaction answers as the transcript page shows them: where in the conversation the customer
 * rated it (1–5) and the comment they added, so a teammate reading it sees how it landed. This
 * module is the port (the satisfaction feature maps its records onto it) and the words the page
 * uses.
 */

/** One answered satisfaction question. */
export interface PageRating {
  id: string;
  /** 1 to 5. */
  score: number;
  /** When the customer answered. */
  at: Date;
  comment?: string | undefined;
  /** The question followed a teammate's hand-back (a person took part). */
  withPerson: boolean;
}

/** The conversation's answered questions, oldest first. */
export type PageRatings = (conversationId: string) => Promise<PageRating[]>;

/** The rating in words: "Rated 4 out of 5", and after whose help. */
export const ratingText = (rating: Pick<PageRating, 'score' | 'withPerson'>): string =>
  `Rated ${rating.score} out of 5${rating.withPerson ? ' after a teammate helped' : ''}`;

/** Five stars, `score` of them filled (shown beside the words, hidden from screen readers). */
export const ratingStars = (score: number): string => '★'.repeat(score) + '☆'.repeat(Math.max(0, 5 - score));

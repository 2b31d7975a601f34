/**
 * Synthetic help-center text with a natural vocabulary for the knowledge benchmarks: 8,000
 * made-up words drawn by Zipf's law (a few very common, most rare), as real prose is; queries use
 * content words (ranks 50–3,050). Seeded: every run writes the same text.
 */
let seed = 42;
const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
const VOCABULARY = 8_000;
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tas', 'vo', 'pel', 'dor', 'sin', 'fa', 'gru', 'mek', 'tol', 'bri', 'zan', 'qui'];
const words = Array.from({ length: VOCABULARY }, (_, rank) => {
  let word = '';
  for (let n = rank + 7; n > 0; n = Math.floor(n / 16)) word += SYLLABLES[n % 16];
  return word;
});
const harmonic = words.reduce((sum, _, rank) => sum + 1 / (rank + 1), 0);
const cumulative: number[] = [];
words.reduce((sum, _, rank) => (cumulative[rank] = sum + 1 / (rank + 1) / harmonic), 0);
const zipfWord = () => {
  const draw = random();
  let low = 0;
  let high = VOCABULARY - 1;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((cumulative[middle] ?? 1) < draw) low = middle + 1;
    else high = middle;
  }
  return words[low]!;
};
export const sentence = (length: number) => Array.from({ length }, zipfWord).join(' ');
export const query = (length: number) => Array.from({ length }, () => words[50 + Math.floor(random() * 3_000)]).join(' ');

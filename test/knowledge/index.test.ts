/**
 * The in-process index alone (no MongoDB, no Redis): language-aware BM25 in the six languages,
 * audiences, owners replaced and removed (past a compaction), and the vector ranking fused by
 * reciprocal rank fusion, gated by similarity; MODEL_EMBEDDING's configuration.
 */
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors/index.js';
import { packVector } from '../../src/knowledge/embeddings.js';
import { createKnowledgeIndex } from '../../src/knowledge/knowledge-index.js';
import type { ChunkRecord } from '../../src/knowledge/model.js';
import { detectLanguage, stem, words } from '../../src/knowledge/text-analysis.js';
import { stubEmbedding } from '../support/embedding-stub.js';

const chunk = (owner: string, n: number, title: string, text: string, extra: Partial<ChunkRecord> = {}): ChunkRecord => ({
  _id: `${owner}#${n}`,
  owner,
  title,
  headingPath: [],
  url: `https://help.example/${owner}`,
  text,
  sites: [],
  ...extra,
});

const titles = (passages: { title: string }[]) => passages.map((passage) => passage.title);

describe('language-aware terms', () => {
  test('folding and stemming: accents, plurals and inflections meet their stems; Arabic articles and diacritics go', () => {
    expect(stem('pedidos', 'es')).toBe(stem('pedido', 'es'));
    expect(words('Café ÉTÉ Straße')).toEqual(['cafe', 'ete', 'strasse']);
    expect(stem(words('الشحن')[0]!, 'ar')).toBe(stem(words('شحن')[0]!, 'ar'));
    expect(stem(words('الإرجاع')[0]!, 'ar')).toBe(stem(words('ارجاع')[0]!, 'ar'));
    expect(stem('lieferungen', 'de')).toBe(stem('lieferung', 'de'));
    expect(stem('returns', 'en')).toBe(stem('returned', 'en'));
  });

  test('a text without a declared language is read in the one its common words show', () => {
    expect(detectLanguage(words('Los pedidos se envían en dos días por correo'))).toBe('es');
    expect(detectLanguage(words('Les retours sont gratuits pour votre commande'))).toBe('fr');
    expect(detectLanguage(words('Die Lieferung ist kostenlos und dauert drei Tage'))).toBe('de');
    expect(detectLanguage(words('O prazo de entrega é de cinco dias para as encomendas'))).toBe('pt');
    expect(detectLanguage(words('يمكنك إرجاع المنتج خلال ثلاثين يوما'))).toBe('ar');
    expect(detectLanguage(words('Returns are free within thirty days'))).toBe('en');
  });

  test('each of the six languages finds its passage by an inflected word of the query', async () => {
    const index = await createKnowledgeIndex();
    await index.replaceOwner('doc:es', [chunk('doc:es', 0, 'Devoluciones', 'Puedes devolver los productos durante treinta días.', { language: 'es' })]);
    await index.replaceOwner('doc:fr', [chunk('doc:fr', 0, 'Livraisons', 'Nous livrons la commande en trois jours ouvrés.', { language: 'fr' })]);
    await index.replaceOwner('doc:de', [chunk('doc:de', 0, 'Lieferungen', 'Die Lieferung dauert drei Werktage.')]);
    await index.replaceOwner('doc:pt', [chunk('doc:pt', 0, 'Pagamentos', 'Aceitamos pagamentos com cartão de crédito.')]);
    await index.replaceOwner('doc:ar', [chunk('doc:ar', 0, 'سياسة الإرجاع', 'يمكنك إرجاع المنتجات خلال ثلاثين يومًا من الاستلام.')]);
    await index.replaceOwner('doc:en', [chunk('doc:en', 0, 'Gift cards', 'Gift cards are valid for two years.')]);
    const audience = { channel: 'whatsapp' };
    expect(titles(await index.search('¿cómo hago una devolución?', audience, 5))).toEqual(['Devoluciones']);
    expect(titles(await index.search('quand arrive ma livraison', audience, 5))).toEqual(['Livraisons']);
    expect(titles(await index.search('Wie lange dauert die Lieferung?', audience, 5))).toEqual(['Lieferungen']);
    expect(titles(await index.search('posso fazer o pagamento com cartão?', audience, 5))).toEqual(['Pagamentos']);
    expect(titles(await index.search('كيف أرجع المنتج؟', audience, 5))).toEqual(['سياسة الإرجاع']);
    expect(titles(await index.search('is my gift card still valid', audience, 5))).toEqual(['Gift cards']);
    expect(await index.search('opening hours of the warehouse', audience, 5)).toEqual([]);
  });
});

describe('the relevance rule', () => {
  test("a figure no passage holds (the customer's height, with its decimal point) weighs nothing; a rare word the passages lack still sinks them", async () => {
    const index = await createKnowledgeIndex();
    const pages: [string, string][] = [
      ['Size guide', 'Choose the frame size for your height: S from 155 to 165 cm, M from 165 to 175 cm, L from 175 to 185 cm.'],
      ['Delivery', 'Orders are delivered within 2 to 3 business days.'],
      ['Returns', 'Return any item within 30 days for a full refund.'],
      ['Payment', 'We accept cards, PayPal and bank transfers.'],
      ['Warranty', 'Frames are guaranteed for ten years, motors for two.'],
      ['Stores', 'Visit our stores in Madrid and Lisbon.'],
      ['Battery care', 'Charge the battery at room temperature.'],
      ['Assembly', 'Attach the handlebar and the pedals.'],
    ];
    for (const [at, [title, text]] of pages.entries()) await index.replaceOwner(`page:${at}`, [chunk(`page:${at}`, 0, title, text)]);
    const audience = { channel: 'whatsapp' };
    expect(titles(await index.search("hi I'm 1.72 tall, which size do I need?", audience, 5))).toEqual(['Size guide']);
    expect(await index.search('Which size of helmet do you sell?', audience, 5)).toEqual([]);
  });
});

describe('owners and audiences', () => {
  test('a site-limited passage reaches only its site; a replaced owner answers with its new text; a removed one not at all', async () => {
    const index = await createKnowledgeIndex();
    await index.replaceOwner('doc:a', [chunk('doc:a', 0, 'Brand A returns', 'Returns within 30 days.', { sites: ['brand-a'] })]);
    await index.replaceOwner('doc:b', [chunk('doc:b', 0, 'Brand B returns', 'Returns within 14 days.', { sites: ['brand-b', 'whatsapp'] })]);
    expect(titles(await index.search('returns', { site: 'brand-a', channel: 'web' }, 5))).toEqual(['Brand A returns']);
    expect(titles(await index.search('returns', { channel: 'whatsapp' }, 5))).toEqual(['Brand B returns']);
    await index.replaceOwner('doc:a', [chunk('doc:a', 0, 'Brand A exchanges', 'Exchanges within 30 days.', { sites: ['brand-a'] })]);
    expect(await index.search('returns', { site: 'brand-a', channel: 'web' }, 5)).toEqual([]);
    expect(titles(await index.search('exchanges', { site: 'brand-a', channel: 'web' }, 5))).toEqual(['Brand A exchanges']);
    await index.removeOwner('doc:b');
    expect(await index.search('returns', { channel: 'whatsapp' }, 5)).toEqual([]);
    expect([index.size(), index.owners()]).toEqual([1, 1]);
  });

  test('thousands of removals compact the postings and reuse their slots; what stays is still found', async () => {
    const index = await createKnowledgeIndex();
    for (let owner = 0; owner < 3_000; owner += 1)
      await index.replaceOwner(`doc:${owner}`, [chunk(`doc:${owner}`, 0, `Topic ${owner}`, `alpha beta item${owner}`)]);
    for (let owner = 0; owner < 2_500; owner += 1) await index.removeOwner(`doc:${owner}`);
    for (let owner = 3_000; owner < 4_000; owner += 1)
      await index.replaceOwner(`doc:${owner}`, [chunk(`doc:${owner}`, 0, `Topic ${owner}`, `gamma item${owner}`)]);
    expect(index.size()).toBe(1_500);
    expect(titles(await index.search('item2999', {}, 5))).toEqual(['Topic 2999']);
    expect(titles(await index.search('item3500', {}, 5))).toEqual(['Topic 3500']);
    expect(await index.search('item10', {}, 5)).toEqual([]);
    expect((await index.search('alpha', {}, 1_000)).length).toBe(500);
  });
});

describe('hybrid ranking', () => {
  const DIMENSIONS = 512;
  const SYNONYMS = [['delivery', 'parcel']];
  const embedded = (record: ChunkRecord): ChunkRecord => ({
    ...record,
    vector: packVector(stubEmbedding(`${record.title}\n${record.text}`, DIMENSIONS, SYNONYMS)),
    embeddingModel: 'openai:text-embedding-3-small',
  });
  const query = (text: string) => Float32Array.from(stubEmbedding(text, DIMENSIONS, SYNONYMS));

  test('the vector ranking finds what shares no word with the query, and is fused with BM25', async () => {
    const index = await createKnowledgeIndex({ embeddingModel: 'openai:text-embedding-3-small' });
    await index.replaceOwner('doc:delivery', [embedded(chunk('doc:delivery', 0, 'Delivery times', 'Delivery takes 2 to 3 business days.'))]);
    await index.replaceOwner('doc:gift', [embedded(chunk('doc:gift', 0, 'Gift cards', 'Gift cards are valid for two years.'))]);
    expect(index.vectors()).toBe(2);
    expect(await index.search('where is my parcel', {}, 5)).toEqual([]);
    // A hit by meaning alone is no answer unless very close (the model's calibrated `closeSimilarity`).
    expect(await index.search('where is my parcel', {}, 5, { vector: query('where is my parcel') })).toEqual([]);
    const close = await createKnowledgeIndex({ embeddingModel: 'openai:text-embedding-3-small', closeSimilarity: 0.3 });
    await close.replaceOwner('doc:delivery', [embedded(chunk('doc:delivery', 0, 'Delivery times', 'Delivery takes 2 to 3 business days.'))]);
    expect(titles(await close.search('where is my parcel', {}, 5, { vector: query('where is my parcel') }))).toEqual(['Delivery times']);
    const both = await index.search('gift cards', {}, 5, { vector: query('gift cards') });
    expect(titles(both)[0]).toBe('Gift cards');
    expect(both[0]!.score).toBeCloseTo(2 / 61, 5);
  });

  test('vectors of another model are not held; without MODEL_EMBEDDING none are', async () => {
    const other = await createKnowledgeIndex({ embeddingModel: 'openai:text-embedding-3-large' });
    const lexical = await createKnowledgeIndex();
    for (const index of [other, lexical]) {
      await index.replaceOwner('doc:delivery', [embedded(chunk('doc:delivery', 0, 'Delivery times', 'Delivery takes 2 to 3 business days.'))]);
      expect(index.vectors()).toBe(0);
      expect(titles(await index.search('delivery', {}, 5, { vector: query('delivery') }))).toEqual(['Delivery times']);
    }
  });
});

describe('MODEL_EMBEDDING', () => {
  const BASE = { PUBLIC_BASE_URL: 'https://assistant.example.test', WIDGET_TOKEN_SECRET: 'w'.repeat(32), OPENAI_API_KEY: 'sk-test' };

  test("OpenAI's text-embedding-3 gets 512 dimensions unless told; another model its own; unset, none", () => {
    expect(loadConfig({ ...BASE, MODEL_EMBEDDING: 'openai:text-embedding-3-small' }).model.embedding).toEqual({
      provider: 'openai',
      modelId: 'text-embedding-3-small',
      dimensions: 512,
    });
    expect(loadConfig({ ...BASE, MODEL_EMBEDDING: 'openai:text-embedding-3-large', MODEL_EMBEDDING_DIMENSIONS: '256' }).model.embedding?.dimensions).toBe(256);
    expect(loadConfig({ ...BASE, GOOGLE_GENERATIVE_AI_API_KEY: 'g', MODEL_EMBEDDING: 'google:text-embedding-004' }).model.embedding).toEqual({
      provider: 'google',
      modelId: 'text-embedding-004',
      dimensions: undefined,
    });
    expect(loadConfig(BASE).model.embedding).toBeUndefined();
  });

  test('a provider without a key, or Anthropic (no embedding models), is refused at start-up', () => {
    expect(() => loadConfig({ ...BASE, MODEL_EMBEDDING: 'google:text-embedding-004' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...BASE, ANTHROPIC_API_KEY: 'a', MODEL_EMBEDDING: 'anthropic:claude' })).toThrow(/Anthropic offers no embedding model/);
  });
});

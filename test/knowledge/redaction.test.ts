/**
 * Personal data out of a suggestion's exchange and draft, over a table of what a person's message
 * can carry, in the widget's languages (en, es, fr, de, pt, ar) and Italian: every planted
 * identifier is gone, the business's facts around it stay — names nobody lists (a surname typed
 * alone, another teammate) by their place in the sentence, while product, brand, carrier and
 * role words in the same places stay, and so does every name a whole help center uses.
 */
import { withoutPersonalData } from '../../src/knowledge/suggestions-draft.js';
import { FAQ, MANUAL, PAGES, QUESTIONS } from './eval/help-center.js';

interface Row {
  kind: string;
  text: string;
  /** What must not survive. */
  gone: string[];
  /** The business's words that must stay. */
  kept?: string[];
  /** What the caller knows (profile name, contacts, teammates). */
  personal?: string[];
}

const KNOWN = ['Maya', 'whatsapp:+447700900123', 'maya@example.com', 'Cleo', 'Jonas Weber'];

const ROWS: Row[] = [
  // en
  {
    kind: 'surname beside the profile name',
    text: 'Hi, this is Maya Lindqvist about my board.',
    gone: ['Maya', 'Lindqvist'],
    kept: ['about my board'],
    personal: KNOWN,
  },
  { kind: 'teammate named by the holder', text: 'My colleague Priya will check the stock on Monday.', gone: ['Priya'], kept: ['check the stock on Monday'] },
  { kind: 'teammate on the roster', text: 'Jonas says the warranty is 2 years.', gone: ['Jonas'], kept: ['the warranty is 2 years'], personal: KNOWN },
  { kind: 'US phone', text: 'Call me at (555) 123-4567 after six.', gone: ['555', '123-4567'], kept: ['after six'] },
  { kind: 'UK phone', text: 'My mobile is 07700 900 982, thanks', gone: ['07700', '900 982'] },
  { kind: 'international phone', text: 'Reach me on +1 202-555-0143 please', gone: ['202-555-0143'] },
  { kind: 'lower-case order number', text: 'where is ord-55822? it was due yesterday', gone: ['55822'], kept: ['it was due yesterday'] },
  { kind: 'invoice with a year', text: 'I need invoice no. 2024/0043 corrected', gone: ['2024/0043', '0043'], kept: ['corrected'] },
  { kind: 'booking ref', text: 'My booking ref is QX7-PLM for two people.', gone: ['QX7-PLM', 'QX7', 'PLM'], kept: ['for two people'] },
  { kind: 'reservation code', text: 'reservation code: KXPLMQ, table by the window', gone: ['KXPLMQ'], kept: ['table by the window'] },
  { kind: 'email', text: 'Send it to maya.lindqvist+shop@example.co.uk', gone: ['maya.lindqvist', 'example.co.uk'] },
  { kind: 'street address', text: 'Deliver to 221B Baker Street, London NW1 6XE', gone: ['221B', 'Baker', 'NW1 6XE'] },
  { kind: 'US address and ZIP', text: 'I live at 1600 Pennsylvania Avenue, Washington 20500', gone: ['1600', 'Pennsylvania', '20500'] },
  {
    kind: 'date of birth',
    text: 'I was born on 12 March 1985 so I qualify for the senior discount',
    gone: ['12 March 1985', '1985'],
    kept: ['senior discount'],
  },
  { kind: 'numeric date of birth', text: 'DOB 03/12/1985', gone: ['03/12/1985'] },
  { kind: 'US written date', text: 'My birthday is March 12, 1985.', gone: ['March 12, 1985'] },
  { kind: 'social security number', text: 'my SSN is 123-45-6789', gone: ['123-45-6789', '6789'] },
  { kind: 'tracking number (UPS)', text: 'tracking 1Z999AA10123456784 says delivered', gone: ['1Z999AA10123456784'], kept: ['says delivered'] },
  { kind: 'tracking number (postal)', text: 'The parcel LX123456789DE is stuck', gone: ['LX123456789DE'], kept: ['is stuck'] },
  { kind: 'card number', text: 'card 4111 1111 1111 1111 was charged twice', gone: ['4111', '1111'], kept: ['was charged twice'] },
  { kind: 'IBAN', text: 'Refund to GB33 BUKB 2020 1555 5555 55', gone: ['GB33', 'BUKB', '5555'] },
  { kind: 'passport', text: 'passport number 533380006', gone: ['533380006'] },
  { kind: 'social handle', text: 'DM me on instagram @maya_surfs', gone: ['maya_surfs'] },
  { kind: 'link with a token', text: 'see https://shop.example/track?id=ab12cd&token=zzqq', gone: ['ab12cd', 'zzqq'], kept: ['https://shop.example/track'] },
  { kind: 'sign-off', text: 'Thanks so much. Regards, Tobias Green', gone: ['Tobias', 'Green'] },
  { kind: 'title', text: 'Please ask for Mrs Okafor at the desk.', gone: ['Okafor'], kept: ['at the desk'] },
  {
    kind: 'business facts stay',
    text: 'Delivery takes 4 to 6 business days, costs 40 euros, free over $1,200; open 9:30-18:00, 2-year warranty, 24h support, COVID-19 rules, 100km range.',
    gone: [],
    kept: ['4 to 6 business days', '40 euros', '$1,200', '9:30-18:00', '2-year warranty', '24h support', 'COVID-19', '100km'],
  },
  // es
  { kind: 'introduction', text: 'Hola, me llamo Lucía Fernández y tengo una duda.', gone: ['Lucía', 'Fernández'], kept: ['tengo una duda'] },
  { kind: 'soy', text: 'Buenas, soy Javier Ortega Ruiz, cliente desde hace años', gone: ['Javier', 'Ortega', 'Ruiz'], kept: ['cliente desde hace años'] },
  { kind: 'phone', text: 'Llamadme al 612 34 56 78 por la tarde', gone: ['612 34 56 78'], kept: ['por la tarde'] },
  { kind: 'order', text: 'Mi pedido nº 4471 no ha llegado', gone: ['4471'], kept: ['no ha llegado'] },
  { kind: 'address', text: 'Vivo en Calle Mayor 12, 3º B, 28013 Madrid', gone: ['Mayor 12', '3º B', '28013'] },
  { kind: 'DNI', text: 'Mi DNI es 12345678Z', gone: ['12345678Z'] },
  { kind: 'NIE', text: 'con NIE X1234567L', gone: ['X1234567L'] },
  { kind: 'date of birth', text: 'nací el 3 de mayo de 1990', gone: ['3 de mayo de 1990', '1990'] },
  { kind: 'localizador', text: 'El localizador de la reserva es ABC12D', gone: ['ABC12D'] },
  { kind: 'IBAN', text: 'Devolución a ES91 2100 0418 4502 0005 1332', gone: ['ES91', '2100', '1332'] },
  { kind: 'tracking', text: 'Número de seguimiento: PQ123456789ES', gone: ['PQ123456789ES'] },
  { kind: 'business facts stay', text: 'Las devoluciones son gratis durante 30 días y el envío cuesta 4,95 €.', gone: [], kept: ['30 días', '4,95 €'] },
  // fr
  { kind: 'introduction', text: "Bonjour, je m'appelle Camille Durand.", gone: ['Camille', 'Durand'] },
  { kind: 'phone', text: 'Rappelez-moi au 06 12 34 56 78', gone: ['06 12 34 56 78', '56 78'] },
  { kind: 'address', text: "J'habite au 12 rue de la Paix, 75002 Paris", gone: ['12 rue', 'Paix', '75002'] },
  { kind: 'order', text: 'Ma commande numéro 883421 est en retard', gone: ['883421'], kept: ['est en retard'] },
  { kind: 'date of birth', text: 'Je suis née le 1er mars 1985', gone: ['1er mars 1985'] },
  { kind: 'social security number', text: 'numéro de sécu 1 85 05 78 006 084 36', gone: ['006 084', '85 05 78'] },
  { kind: 'title', text: 'Demandez M. Lefèvre au comptoir', gone: ['Lefèvre'], kept: ['au comptoir'] },
  { kind: 'business facts stay', text: 'La livraison est offerte dès 50 € et prend 2 à 3 jours ouvrés.', gone: [], kept: ['50 €', '2 à 3 jours ouvrés'] },
  // de
  { kind: 'introduction', text: 'Guten Tag, mein Name ist Jürgen Müller.', gone: ['Jürgen', 'Müller'] },
  { kind: 'address', text: 'Bitte an Hauptstraße 5a, 10115 Berlin liefern', gone: ['Hauptstraße 5a', '10115'], kept: ['liefern'] },
  { kind: 'invoice', text: 'Rechnung RE-2024-118 ist falsch', gone: ['RE-2024-118', '2024-118'], kept: ['ist falsch'] },
  { kind: 'customer number', text: 'Meine Kundennummer lautet K-88213', gone: ['88213'] },
  { kind: 'phone', text: 'Hotline +49 (0)30 1234567, sonst 0171 2345678', gone: ['1234567', '0171', '2345678'] },
  { kind: 'date of birth', text: 'geboren am 12.03.1985', gone: ['12.03.1985'] },
  { kind: 'tax id', text: 'Steuer-ID 12 345 678 901', gone: ['345 678 901'] },
  { kind: 'sign-off', text: 'Liebe Grüße, Anke Schröder', gone: ['Anke', 'Schröder'] },
  { kind: 'business facts stay', text: 'Rückgabe in 30 Tagen, Versand ab 10.000 Punkten gratis.', gone: [], kept: ['30 Tagen', '10.000 Punkten'] },
  // pt
  { kind: 'introduction', text: 'Olá, chamo-me João Silva Pereira', gone: ['João', 'Silva', 'Pereira'] },
  { kind: 'phone', text: 'Liguem para 912 345 678', gone: ['912 345 678'] },
  { kind: 'address', text: 'Moro na Rua Augusta, 100, 1100-048 Lisboa', gone: ['Augusta', '100', '1100-048'] },
  { kind: 'CPF', text: 'Meu CPF é 123.456.789-09', gone: ['123.456.789-09', '789-09'] },
  { kind: 'NIF', text: 'NIF 123456789 para a fatura', gone: ['123456789'], kept: ['para a fatura'] },
  { kind: 'order', text: 'A minha encomenda n.º 55120 não chegou', gone: ['55120'], kept: ['não chegou'] },
  { kind: 'date of birth', text: 'nasci a 12 de março de 1985', gone: ['12 de março de 1985'] },
  { kind: 'CEP', text: 'CEP 01310-100, São Paulo', gone: ['01310-100'] },
  // it
  { kind: 'introduction', text: 'Buongiorno, mi chiamo Giulia Rossi', gone: ['Giulia', 'Rossi'] },
  { kind: 'address', text: 'Abito in Via Roma 10, 00184 Roma', gone: ['Via Roma 10', '00184'] },
  { kind: 'codice fiscale', text: 'codice fiscale RSSMRA85T10A562S', gone: ['RSSMRA85T10A562S'] },
  { kind: 'phone', text: 'chiamami al 347 123 4567', gone: ['347 123 4567'] },
  { kind: 'order', text: "L'ordine 99812 è in ritardo", gone: ['99812'], kept: ['è in ritardo'] },
  // ar
  { kind: 'introduction', text: 'مرحبا، اسمي أحمد الهاشمي', gone: ['أحمد', 'الهاشمي'] },
  { kind: 'phone', text: 'اتصل بي على 0501234567', gone: ['0501234567'] },
  { kind: 'phone (Arabic-Indic digits)', text: 'رقمي ٠٥٠١٢٣٤٥٦٧', gone: ['٠٥٠١٢٣٤٥٦٧'] },
  { kind: 'order', text: 'رقم الطلب 48213 لم يصل', gone: ['48213'], kept: ['لم يصل'] },
  { kind: 'address', text: 'عنواني شارع الملك فهد 12 الرياض', gone: ['الملك فهد', '12'] },
  { kind: 'date of birth', text: 'تاريخ الميلاد 12 مارس 1985', gone: ['12 مارس 1985'] },
  { kind: 'teammate', text: 'معك سارة من فريق الدعم', gone: ['سارة'], kept: ['من فريق الدعم'] },
];

/** A surname typed alone, another teammate named by the holder: names nobody lists, known by their place in the sentence. */
const UNLISTED: Row[] = [
  {
    kind: 'en: surname before what a person does',
    text: 'Okonkwo will pick it up tomorrow morning.',
    gone: ['Okonkwo'],
    kept: ['will pick it up tomorrow morning'],
  },
  { kind: 'en: surname after "ask"', text: 'Please ask Kowalczyk about the refund.', gone: ['Kowalczyk'], kept: ['about the refund'] },
  { kind: 'en: full name before what a person does', text: 'Ada Okonkwo will call you back after lunch.', gone: ['Ada', 'Okonkwo'], kept: ['after lunch'] },
  {
    kind: 'en: teammate from a team',
    text: 'Santos from billing will email you the invoice.',
    gone: ['Santos'],
    kept: ['from billing will email you the invoice'],
  },
  {
    kind: 'en: checked with',
    text: 'I checked with Nakamura in the warehouse, it ships Monday.',
    gone: ['Nakamura'],
    kept: ['in the warehouse, it ships Monday'],
  },
  { kind: 'en: an opening word stays', text: 'Maybe Lindqvist is on holiday this week.', gone: ['Lindqvist'], kept: ['Maybe', 'this week'] },
  { kind: 'es: surname before what a person does', text: 'Gutiérrez te llamará mañana por la tarde.', gone: ['Gutiérrez'], kept: ['te llamará mañana'] },
  { kind: 'es: surname after "pregunta a"', text: 'Pregunta a Kowalczyk por la garantía.', gone: ['Kowalczyk'], kept: ['por la garantía'] },
  { kind: 'fr: surname before what a person does', text: 'Okonkwo vous rappellera demain.', gone: ['Okonkwo'], kept: ['vous rappellera demain'] },
  { kind: 'fr: surname after "voyez avec"', text: 'Voyez avec Kowalczyk pour le remboursement.', gone: ['Kowalczyk'], kept: ['pour le remboursement'] },
  {
    kind: 'de: surname before what a person does',
    text: 'Okonkwo kümmert sich um Ihre Bestellung.',
    gone: ['Okonkwo'],
    kept: ['kümmert sich um Ihre Bestellung'],
  },
  { kind: 'de: surname after "fragen Sie"', text: 'Fragen Sie Kowalczyk nach der Rechnung.', gone: ['Kowalczyk'], kept: ['nach der Rechnung'] },
  { kind: 'de: a title noun stays', text: 'Der Kollege Okonkwo ruft Sie zurück.', gone: ['Okonkwo'], kept: ['Der Kollege', 'ruft Sie zurück'] },
  { kind: 'pt: surname after "fale com o"', text: 'Fale com o Okonkwo sobre a troca.', gone: ['Okonkwo'], kept: ['sobre a troca'] },
  { kind: 'pt: surname before what a person does', text: 'Kowalczyk vai ligar amanhã.', gone: ['Kowalczyk'], kept: ['vai ligar amanhã'] },
  { kind: 'it: surname after "chiedi a"', text: 'Chiedi a Kowalczyk per il rimborso.', gone: ['Kowalczyk'], kept: ['per il rimborso'] },
  { kind: 'it: surname before what a person does', text: 'Okonkwo ti richiamerà domani.', gone: ['Okonkwo'], kept: ['ti richiamerà domani'] },
];

/** Product, brand, carrier and role words in the same places: they stay. */
const PRODUCTS: Row[] = [
  {
    kind: 'en: a product before a verb',
    text: 'The Aeron chair will ship on Monday; Zephyr will be restocked soon.',
    gone: [],
    kept: ['Aeron', 'Zephyr', 'Monday'],
  },
  { kind: 'en: a brand as subject', text: 'Dyson will ship the V15 tomorrow and Miele covers the motor.', gone: [], kept: ['Dyson', 'V15', 'Miele'] },
  {
    kind: 'en: a carrier picks it up',
    text: 'DPD will pick it up tomorrow, or Evri will call you.',
    gone: [],
    kept: ['DPD will pick it up', 'Evri will call you'],
  },
  {
    kind: 'en: the team and pronouns',
    text: 'We will call you back. Our team is on it. Customer Service will get back to you.',
    gone: [],
    kept: ['We will call you back', 'Our team is on it', 'Customer Service will get back to you'],
  },
  { kind: 'en: product names in a question', text: 'Can I ask about the Veloria C3 and the Nimbus Pro kettle?', gone: [], kept: ['Veloria C3', 'Nimbus Pro'] },
  { kind: 'es: a carrier and a product', text: 'Correos te llamará para la entrega del Roomba.', gone: [], kept: ['Correos te llamará', 'Roomba'] },
  { kind: 'fr: the carrier and a product', text: 'Chronopost vous rappellera pour livrer la Thermomix.', gone: [], kept: ['Chronopost', 'Thermomix'] },
  {
    kind: 'de: nouns are capitalised',
    text: 'Der Techniker ruft Sie zurück. Fragen Sie Ihren Händler nach dem Akku.',
    gone: [],
    kept: ['Der Techniker ruft Sie zurück', 'Fragen Sie Ihren Händler', 'Akku'],
  },
  { kind: 'pt: a product', text: 'A Bimby vai chegar amanhã; fale com o suporte.', gone: [], kept: ['Bimby', 'fale com o suporte'] },
  { kind: 'it: a product', text: 'La Vespa Primavera è disponibile; chiedi al negozio.', gone: [], kept: ['Vespa Primavera', 'chiedi al negozio'] },
];

ROWS.push(...UNLISTED, ...PRODUCTS);

describe('personal data out of a suggestion: every identifier a message can carry', () => {
  test('the table covers six languages and sixty rows', () => {
    expect(ROWS.length).toBeGreaterThanOrEqual(60);
  });

  test.each(ROWS.map((row, index) => [index + 1, row.kind, row] as const))('%i %s', (_index, _kind, row) => {
    const clean = withoutPersonalData(row.text, row.personal ?? []);
    for (const planted of row.gone) expect({ clean, survived: clean.includes(planted) ? planted : undefined }).toEqual({ clean, survived: undefined });
    for (const fact of row.kept ?? []) expect({ clean, lost: clean.includes(fact) ? undefined : fact }).toEqual({ clean, lost: undefined });
  });

  test("a whole help center's sentences and customers' questions keep every name of theirs (products, places, the shop)", () => {
    const sentences = (text: string) => text.split(/(?<=[.!?])\s+/);
    const texts = [
      ...PAGES.flatMap((page) => Object.values(page.sections).flatMap(sentences)),
      ...FAQ.flatMap(([question, answer]) => [question, ...sentences(answer)]),
      ...MANUAL.pages.flatMap(sentences),
      ...QUESTIONS.map(([, question]) => question),
    ];
    expect(texts.length).toBeGreaterThan(300);
    expect(texts.filter((text) => withoutPersonalData(text, []).includes('[name]'))).toEqual([]);
  });

  test('a placeholder says what was there', () => {
    expect(
      withoutPersonalData('Hola María, soy Cleo: tu pedido nº 4471 sale hoy; escríbenos a maria.cruz@correo.es o al 600 111 222.', [
        'María de la Cruz',
        'Cleo',
      ]),
    ).toBe('Hola [name], soy [name]: tu pedido nº [number] sale hoy; escríbenos a [email] o al [phone].');
    expect(withoutPersonalData('Born 12.03.1985, living at Calle Mayor 12, booking QX7-PLM, call (555) 123-4567.', [])).toBe(
      'Born [date], living at [address], booking [number], call [phone].',
    );
  });
});

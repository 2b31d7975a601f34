/**
 * The words personal-data redaction (`redaction.ts`) recognises identifiers by, in the widget's
 * languages (en, es, fr, de, pt, ar) and Italian: what introduces a reference number, a name, a
 * street, and the months of a written date. Lower case; matched case-insensitively, except where
 * a name must be capitalised.
 */

/** A '|'-separated list. */
const list = (words: string): string[] => words.split('|');

/** Words after which the next token is a reference (an order, invoice, booking, ticket, account, id or tracking number). */
export const REFERENCE_WORDS = list(
  'order|orders|invoice|invoices|booking|bookings|reservation|reservations|ticket|tickets|ref|reference|confirmation|tracking|parcel|' +
    'package|shipment|case|account|customer|member|membership|policy|claim|locator|pnr|receipt|transaction|contract|passport|licence|' +
    'license|ssn|iban|card|box|voucher|pedido|pedidos|factura|facturas|reserva|reservas|localizador|billete|entrada|referencia|envío|' +
    'envio|seguimiento|expediente|cuenta|cliente|socio|póliza|contrato|recibo|pasaporte|dni|nie|nif|cif|tarjeta|apartado|incidencia|' +
    'commande|commandes|facture|factures|réservation|billet|dossier|colis|suivi|référence|compte|contrat|reçu|passeport|carte|' +
    'bestellung|bestellnummer|rechnung|rechnungsnummer|buchung|buchungsnummer|buchungscode|reservierung|reservierungsnummer|sendung|' +
    'sendungsnummer|kundennummer|vertragsnummer|auftrag|auftragsnummer|vorgang|vorgangsnummer|konto|referenz|aktenzeichen|ausweis|' +
    'personalausweis|reisepass|steuer-id|postfach|encomenda|encomendas|fatura|faturas|bilhete|referência|rastreio|rastreamento|conta|' +
    'apólice|passaporte|cpf|cartão|caixa|ordine|ordini|fattura|fatture|prenotazione|biglietto|riferimento|spedizione|tracciamento|' +
    'pratica|conto|contratto|polizza|ricevuta|passaporto|casella|طلب|الطلب|طلبي|فاتورة|الفاتورة|حجز|الحجز|تذكرة|التذكرة|مرجع|المرجع|' +
    'تتبع|التتبع|الشحنة|شحنة|حساب|الحساب|الهوية|هوية|جواز|السفر|رقم',
);

/** Words that may stand between a reference word and the reference ("order no.", "número de pedido", "code de réservation"). */
export const REFERENCE_QUALIFIERS = list(
  'no|nr|nº|n°|no°|num|number|numero|número|numéro|nummer|id|code|código|codice|ref|reference|de|do|da|di|del|of|is|es|est|ist|é|è|' +
    'postal|postale|tracking|seguimiento|suivi',
);

/** Words (or phrases) after which capitalised words are a person's name: introductions, greetings, sign-offs, titles, "my colleague". */
export const NAME_INTRODUCERS = list(
  "my name is|my name's|name is|i am|i'm|i’m|this is|call me|hi|hello|hey|dear|good morning|good afternoon|good evening|thanks|" +
    'thank you|regards|cheers|mr|mrs|ms|miss|dr|colleague|my colleague|ask for|speak to|spoke to|spoke with|me llamo|mi nombre es|soy|' +
    'hola|buenos días|buenas tardes|buenas noches|estimado|estimada|querido|querida|gracias|saludos|atentamente|sr|sra|srta|don|doña|' +
    "compañero|compañera|mi compañero|mi compañera|pregunta por|habla con|je m'appelle|je m’appelle|mon nom est|je suis|moi c'est|" +
    'moi c’est|bonjour|bonsoir|salut|cher|chère|merci|cordialement|m|mme|mlle|monsieur|madame|collègue|mon collègue|ma collègue|' +
    'demandez|ich heiße|ich heisse|mein name ist|ich bin|hier ist|hier spricht|hallo|guten tag|guten morgen|guten abend|lieber|liebe|' +
    'herr|frau|danke|grüße|gruß|mfg|kollege|kollegin|mein kollege|meine kollegin|chamo-me|me chamo|o meu nome é|meu nome é|sou|sou o|' +
    'sou a|olá|oi|bom dia|boa tarde|boa noite|caro|cara|prezado|prezada|obrigado|obrigada|cumprimentos|dona|colega|o meu colega|' +
    'a minha colega|meu colega|minha colega|mi chiamo|il mio nome è|sono|ciao|buongiorno|buonasera|salve|gentile|grazie|saluti|sig|' +
    'sig.ra|signor|signora|dott|collega|il mio collega|la mia collega',
);

/** Arabic has no capitals: after these the next word (two after "my name is") is taken as a name. */
export const ARABIC_NAME_INTRODUCERS: readonly (readonly [string, number])[] = [
  ['اسمي', 2],
  ['معك', 1],
  ['معكم', 1],
  ['مرحبا', 1],
  ['مرحباً', 1],
  ['أهلا', 1],
  ['أهلاً', 1],
  ['السيد', 2],
  ['السيدة', 2],
  ['الأستاذ', 2],
  ['الأستاذة', 2],
  ['زميلي', 1],
  ['زميلتي', 1],
  ['شكرا', 1],
  ['شكراً', 1],
];

/** Capitalised words after an introducer that are not names ("Hi Team", "Hallo Kundenservice"). */
export const NOT_NAMES = new Set(
  list(
    'team|equipo|équipe|equipe|squadra|support|soporte|suporte|kundenservice|service|everyone|all|todos|tous|alle|tutti|there|again|grüße|gruß|saludos|regards|cumprimentos|saluti|cordialement|atentamente',
  ),
);

/** Particles inside a name ("María de la Cruz", "Ludwig van Beethoven"). */
export const NAME_PARTICLES = list('de|del|de la|da|das|do|dos|di|du|des|van|von|der|den|la|le|y|e|bin|al|el');

/** Street words written before the street's name and number: "Calle Mayor 12", "Rua Augusta, 100", "Via Roma 10", "شارع الملك فهد". */
export const STREET_BEFORE = list(
  'calle|c/|avenida|avda|av|plaza|pza|paseo|camino|carretera|ronda|travesía|glorieta|rua|travessa|largo|praça|estrada|alameda|rodovia|' +
    'via|viale|piazza|corso|vicolo|strada|rue|avenue|boulevard|bd|place|chemin|allée|impasse|quai|route|cours',
);

/** Street words written after the name (English): "221B Baker Street", "12 Oak Rd". */
export const STREET_AFTER = list('street|st|road|rd|avenue|ave|lane|ln|drive|boulevard|blvd|way|court|place|square|terrace|close|crescent|highway');

/** German street names end in one of these: "Hauptstraße 5", "Bahnhofstr. 12a", "Lindenweg 3". */
export const STREET_SUFFIXES = list('straße|strasse|str.|weg|platz|allee|gasse|damm|ufer|chaussee');

/** Month names and abbreviations, for written dates ("12 March 1985", "3 de mayo de 1990", "12. März 1985", "١٢ مارس ١٩٨٥"). */
export const MONTHS = list(
  'january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|' +
    'dec|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre|janvier|février|mars|avril|' +
    'mai|juin|juillet|août|septembre|octobre|novembre|décembre|januar|februar|märz|juni|juli|oktober|dezember|janeiro|fevereiro|março|' +
    'maio|junho|julho|setembro|outubro|novembro|dezembro|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|ottobre|يناير|فبراير|' +
    'مارس|أبريل|ابريل|مايو|يونيو|يوليو|أغسطس|سبتمبر|أكتوبر|نوفمبر|ديسمبر',
);

/** Units and ordinals a number may carry without being a code: "100km", "24h", "2nd", "1er", "3º". */
export const NUMBER_SUFFIXES = list(
  'st|nd|rd|th|er|ère|e|è|eme|ème|º|ª|°|h|hs|hrs|min|mins|s|am|pm|km|m|cm|mm|kg|g|mg|l|ml|cl|gb|mb|tb|kb|k|x|mp|w|kw|kwh|v|mah|hz|ghz|' +
    'mhz|p|fps|cv|ps|d|j|t|ct|mo|yr|yrs',
);

/** Currency marks: a grouped number beside one is an amount, kept ("10 000 €", "$1,200"). */
export const CURRENCY = /^(?:€|\$|£|eur|euros?|usd|dollars?|dólares|gbp|pounds?|libras|reais|r\$|chf|francs?|sar|aed|ريال|درهم|دولار|يورو)/iu;

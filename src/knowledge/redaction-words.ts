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
    'team|equipo|équipe|equipe|squadra|support|soporte|suporte|kundenservice|service|everyone|all|todos|tous|alle|tutti|there|again|grüße|gruß|saludos|regards|cumprimentos|saluti|cordialement|atentamente|' +
      "i'd|i’d|i'm|i’m|i've|i’ve|i'll|i’ll",
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

/** Verbs and phrases whose object is a person: the capitalised words after them are a name ("ask Kowalczyk", "pregunta a Okonkwo", "fragen Sie …"). */
export const PERSON_OBJECT_VERBS = list(
  'ask|tell|check with|checked with|talk to|talked to|speak with|spoken to|ping|cc|pass it to|passed it to|hand it to|handed it to|' +
    'handed this to|forward it to|forwarded it to|escalated it to|escalated to|assigned to|reach out to|reached out to|pregunta a|' +
    'preguntar a|pregúntale a|pregunte a|hablé con|hable con|consulta con|consulté con|consulte con|llama a|avisa a|avisé a|' +
    'se lo paso a|se lo pasé a|demandez à|demande à|demandé à|parlez à|parlez avec|parlé avec|voyez avec|vu avec|voir avec|contactez|' +
    'transmis à|fragen sie|frag|fragen|fragte|sprechen sie mit|sprich mit|gesprochen mit|wenden sie sich an|weitergeleitet an|' +
    'übergeben an|fale com|fale com o|fale com a|falei com|falei com o|falei com a|falar com|falar com o|falar com a|pergunte ao|' +
    'pergunte à|pergunte a|perguntei ao|perguntei à|passei ao|passei à|encaminhei ao|encaminhei à|chiedi a|chieda a|chiedete a|' +
    'ho chiesto a|parla con|parli con|ho parlato con|senti|contatta|ho passato a',
);

/** What only a person does, right after their name: "Okonkwo will pick it up", "Gutiérrez te llamará", "… kümmert sich". Case as written. */
export const PERSON_PREDICATES = list(
  "will pick it up|will pick this up|'ll pick it up|will take it from here|will take over|will follow up|will get back to you|" +
    "will call you|'ll call you|will ring you|will be in touch|will look into it|is on it|is off today|is on holiday|is on leave|" +
    'handled it|took care of it|from billing|from accounts|from the warehouse|from our team|from support|from sales|told me|' +
    'se encarga|se encargará|te llamará|le llamará|te contactará|le contactará|se pondrá en contacto|está de vacaciones|me dijo|' +
    "lo revisará|de facturación|del almacén|de soporte|s'en occupe|s’en occupe|s'en occupera|s’en occupera|vous rappellera|" +
    "te rappellera|vous contactera|prendra le relais|est en congé|est en vacances|m'a dit|m’a dit|du service client|" +
    'de la comptabilité|kümmert sich|ruft Sie zurück|ruft Sie an|ruft dich zurück|meldet sich|ist im Urlaub|hat mir gesagt|' +
    'aus der Buchhaltung|vom Lager|vom Kundendienst|vai ligar|vai tratar|trata disso|vai entrar em contacto|vai entrar em contato|' +
    'está de férias|disse-me|me disse|da faturação|do armazém|ti richiamerà|la richiamerà|vi richiamerà|se ne occupa|' +
    "se ne occuperà|è in ferie|mi ha detto|dal magazzino|dell'amministrazione|dell’amministrazione",
);

/**
 * Capitalised words before such a predicate that are no one's name: pronouns, determiners, words
 * that open a sentence, roles and teams, and the carriers a teammate says will call or pick up.
 */
export const NOT_ACTORS = new Set(
  list(
    'we|you|he|she|they|it|someone|somebody|nobody|everyone|our|your|the|this|that|who|maybe|then|so|also|today|tomorrow|yes|ok|okay|' +
      'sure|now|customer|service|billing|sales|warehouse|delivery|courier|driver|technician|store|shop|manager|agent|staff|' +
      'yo|él|ella|ellos|ellas|nosotros|usted|ustedes|alguien|nadie|quien|quizás|luego|mañana|hoy|sí|entonces|el|la|nuestro|nuestra|' +
      "il|elle|on|nous|vous|ils|quelqu’un|quelqu'un|personne|qui|peut-être|demain|alors|oui|le|notre|votre|" +
      'er|sie|es|wir|ihr|ihre|ihren|ihrem|jemand|niemand|man|wer|vielleicht|morgen|heute|dann|ja|der|die|das|unser|unsere|' +
      'ele|ela|eles|nós|você|alguém|ninguém|quem|talvez|amanhã|hoje|sim|então|o|a|nosso|nossa|' +
      'lui|lei|loro|noi|voi|qualcuno|nessuno|chi|forse|domani|oggi|allora|il|lo|nostro|nostra|' +
      'dhl|ups|fedex|gls|dpd|tnt|correos|seur|mrw|nacex|chronopost|colissimo|hermes|evri|parcelforce|brt|ctt|inpost|postnl|bpost|' +
      'technik|techniker|fahrer|kurier|lager|kundendienst|buchhaltung|repartidor|técnico|mensajero|livreur|transporteur|' +
      'estafeta|técnica|corriere|tecnico',
  ),
);

/** Words before a capitalised word that make it a noun, not a name ("Der Techniker ruft Sie zurück", "the Nimbus will ship"). */
export const DETERMINERS = new Set(
  list(
    'the|a|an|our|your|my|their|this|that|el|la|los|las|un|una|nuestro|nuestra|su|tu|mi|le|les|une|notre|votre|mon|ma|son|sa|du|au|' +
      'der|die|das|den|dem|des|ein|eine|einen|einem|einer|unser|unsere|unseren|unserem|ihr|ihre|ihren|ihrem|mein|meine|' +
      'um|uma|nosso|nossa|seu|sua|do|da|il|lo|gli|uno|nostro|vostro|del|della',
  ),
);

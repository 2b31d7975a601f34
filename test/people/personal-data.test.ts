/**
 * What a FAQ suggestion's draft keeps of a customer's words (`withoutPersonalData`): every kind of
 * identifier a message can carry goes, in the widget's six languages — phone numbers in their
 * local forms, order, invoice, booking, reservation and tracking numbers (lower case too), street
 * addresses, postcodes, national ids and birth dates — while the facts about the business stay.
 */
import { describe, expect, test } from '@jest/globals';
import { withoutPersonalData } from '../../src/knowledge/suggestions-draft.js';

const REMOVED: [string, string, string][] = [
  ['en', 'Call me on (555) 123-4567 please', '(555) 123-4567'],
  ['en', 'My order ord-55822 is late', 'ord-55822'],
  ['en', 'About invoice no. 2024/0043', '2024/0043'],
  ['en', 'My booking ref QX7-PLM', 'QX7-PLM'],
  ['en', 'The reservation code ZK4P9Q', 'ZK4P9Q'],
  ['en', 'Tracking 1Z999AA10123456784 shows nothing', '1Z999AA10123456784'],
  ['en', 'Send it to 221B Baker Street, London NW1 6XE', 'Baker Street'],
  ['en', 'Send it to 221B Baker Street, London NW1 6XE', 'NW1 6XE'],
  ['en', 'My SSN is 078-05-1120', '078-05-1120'],
  ['en', 'My NI number is QQ 12 34 56 C', 'QQ 12 34 56 C'],
  ['en', 'I was born on 12/03/1985', '12/03/1985'],
  ['es', 'Vivo en Calle de Alcalá 48, 28014 Madrid', 'Alcalá 48'],
  ['es', 'Vivo en Calle de Alcalá 48, 28014 Madrid', '28014'],
  ['es', 'Mi DNI es 12345678Z', '12345678Z'],
  ['es', 'Mi NIE es X1234567L', 'X1234567L'],
  ['es', 'Fecha de nacimiento: 1985-03-12', '1985-03-12'],
  ['es', 'El localizador es QX7PLM2', 'QX7PLM2'],
  ['es', 'Llámame al 612 34 56 78', '612 34 56 78'],
  ['de', 'Ich wohne in der Hauptstraße 5, 10115 Berlin', 'Hauptstraße 5'],
  ['de', 'Ich wohne in der Hauptstraße 5, 10115 Berlin', '10115'],
  ['de', 'Ich bin geboren am 12. März 1985', '12. März 1985'],
  ['de', 'Die Sendungsnummer 00340434161094042557 fehlt', '00340434161094042557'],
  ['de', 'Rufen Sie 030 12345678 an', '030 12345678'],
  ['fr', 'Mon adresse: 12 rue de la Paix 75002 Paris', 'de la Paix'],
  ['fr', 'Mon adresse: 12 rue de la Paix 75002 Paris', '75002'],
  ['fr', 'Je suis née le 03/04/1990', '03/04/1990'],
  ['fr', 'Le numéro de suivi est 8L01234567890', '8L01234567890'],
  ['fr', 'Appelez le 06 12 34 56 78', '06 12 34 56 78'],
  ['it', 'Abito in Via Roma 10, 00184 Roma', 'Via Roma 10'],
  ['it', 'Il mio codice fiscale è RSSMRA85T10A562S', 'RSSMRA85T10A562S'],
  ['it', 'Sono nato il 10/12/1985', '10/12/1985'],
  ['it', 'La prenotazione AB-7731 è sbagliata', 'AB-7731'],
  ['pt', 'Moro na Rua Augusta 274, Lisboa', 'Augusta 274'],
  ['pt', 'Data de nascimento: 05/06/1979', '05/06/1979'],
  ['pt', 'A encomenda nº 55812 não chegou', '55812'],
  ['pt', 'Liga-me para o 912 345 678', '912 345 678'],
];

const KEPT = [
  'Delivery takes 4 to 6 business days and costs 40 euros.',
  'Returns are accepted within 30 days of delivery.',
  'Der Versand dauert 3 bis 5 Werktage.',
  'Nuestro horario es de 9 a 18 h, de lunes a viernes.',
  'Le retour est gratuit sous 14 jours.',
  'La garanzia dura 24 mesi.',
  'A entrega demora 2 dias úteis.',
];

describe('a suggestion keeps none of a customer’s identifiers', () => {
  test.each(REMOVED)('%s: "%s" loses %s', (_language, text, identifier) => {
    expect(withoutPersonalData(text, [])).not.toContain(identifier);
  });

  test.each(KEPT)('keeps "%s"', (text) => {
    expect(withoutPersonalData(text, [])).toBe(text);
  });
});

/**
 * The evaluation's fictional help center: Veloria, a shop of electric bikes with stores in Spain.
 * 32 English pages, 12 Spanish ones, an owner's manual crawled as a PDF (one page per model) and
 * 12 FAQ entries. Each page is Markdown as the extractor leaves it (`##` headings).
 */

export interface HelpPage {
  id: string;
  lang: 'en' | 'es';
  title: string;
  /** Sections: heading → text (an empty heading: text under the title). */
  sections: Record<string, string>;
}

export const PAGES: HelpPage[] = [
  {
    id: 'delivery-times',
    lang: 'en',
    title: 'Delivery times',
    sections: {
      '': 'Orders placed before 2 pm on a business day leave our warehouse the same day. Standard delivery takes 3 to 5 business days in mainland Spain and Portugal, and 5 to 8 business days to the rest of the European Union. Express delivery arrives the next business day in mainland Spain. We do not deliver on Sundays or public holidays.',
    },
  },
  {
    id: 'shipping-costs',
    lang: 'en',
    title: 'Shipping costs',
    sections: {
      '': 'Shipping is free on orders over €50. Smaller orders pay €4.95 for standard shipping and €9.95 for express. A complete bike ships in its own box for €39 to any address in Spain and Portugal.',
    },
  },
  {
    id: 'international',
    lang: 'en',
    title: 'International shipping',
    sections: {
      '': 'We ship to every country of the European Union, the United Kingdom, Switzerland and Norway. Orders to the United Kingdom, Switzerland and Norway may owe import duties and customs fees, paid by the recipient. We do not ship outside Europe.',
    },
  },
  {
    id: 'tracking',
    lang: 'en',
    title: 'Tracking your order',
    sections: {
      '': 'As soon as your order leaves the warehouse we email you a tracking link from the carrier (SEUR in Spain, DHL elsewhere). You can also follow every order under Account > Orders. A tracking number starts working a few hours after dispatch.',
    },
  },
  {
    id: 'returns',
    lang: 'en',
    title: 'Returns policy',
    sections: {
      '': 'You can return any product within 30 days of delivery. Accessories must be unused and in their original packaging. An e-bike can be returned if it has been ridden less than 50 km and shows no damage; we check the odometer when it arrives. Custom-built bikes cannot be returned.',
    },
  },
  {
    id: 'return-process',
    lang: 'en',
    title: 'How to return an item',
    sections: {
      '': 'Sign in, open Account > Orders, choose the order and press Request a return. Print the prepaid label we email you, pack the item and drop it at any post office or SEUR point. For an e-bike we send a courier to collect the box from your address.',
    },
  },
  {
    id: 'refunds',
    lang: 'en',
    title: 'Refunds',
    sections: {
      '': 'We refund you within 5 business days of receiving your return, to the payment method you used. Your bank may take another 3 to 10 days to show the money. Orders paid with a gift card are refunded as store credit. The original shipping cost is refunded only if the item was faulty.',
    },
  },
  {
    id: 'exchanges',
    lang: 'en',
    title: 'Exchanges',
    sections: {
      '': 'To swap an item for another size or colour, request a return and place a new order: that way the new item leaves at once instead of waiting for the first one to come back. Frame sizes of an e-bike can be exchanged within 14 days if the bike is unridden.',
    },
  },
  {
    id: 'damaged',
    lang: 'en',
    title: 'Damaged or missing items',
    sections: {
      '': 'If a parcel arrives damaged or a part is missing, write to us within 48 hours with photos of the box and the product. Sign the courier receipt as "damaged" when the box is visibly broken. We send the replacement part or a new bike at our cost.',
    },
  },
  {
    id: 'payment',
    lang: 'en',
    title: 'Payment methods',
    sections: {
      '': 'We accept Visa, Mastercard, American Express, PayPal, Bizum, Apple Pay and Google Pay. Bank transfer is available for orders over €1,000 and the order ships when the money arrives. Your card is charged when the order is confirmed.',
    },
  },
  {
    id: 'financing',
    lang: 'en',
    title: 'Financing and instalments',
    sections: {
      '': 'With Klarna you can split any order into 3 interest-free payments. E-bikes over €600 can also be financed over 6 to 36 months, subject to approval; the rate is shown at checkout before you confirm.',
    },
  },
  {
    id: 'invoices',
    lang: 'en',
    title: 'Invoices',
    sections: {
      '': 'Every order comes with a VAT invoice. Download it under Account > Orders > Invoice. To add a company name and tax ID, enter them at checkout; we cannot change the name on an invoice once it has been issued.',
    },
  },
  {
    id: 'gift-cards',
    lang: 'en',
    title: 'Gift cards',
    sections: {
      '': 'Gift cards come in amounts from €25 to €500 and are valid for two years from purchase. Enter the code at checkout; what you do not spend stays on the card. Gift cards cannot be exchanged for cash.',
    },
  },
  {
    id: 'promo-codes',
    lang: 'en',
    title: 'Discount codes',
    sections: {
      '': 'One discount code can be used per order: enter it in the basket. Codes do not apply to items already on sale. Subscribers to our newsletter get 10% off their first order.',
    },
  },
  {
    id: 'password',
    lang: 'en',
    title: 'Resetting your password',
    sections: {
      '': 'On the sign-in page choose Forgot password and enter your email address. The reset link we send is valid for one hour. If the email does not arrive, check your spam folder.',
    },
  },
  {
    id: 'delete-account',
    lang: 'en',
    title: 'Deleting your account',
    sections: {
      '': 'Go to Account > Settings > Privacy and choose Delete account. Your personal data is erased within 30 days, except invoices, which the law requires us to keep for six years.',
    },
  },
  {
    id: 'privacy',
    lang: 'en',
    title: 'Privacy',
    sections: {
      '': 'We store your name, addresses, phone number and order history to deliver your orders. We never sell personal data. Under the GDPR you may ask for a copy of your data or its correction; write to our data protection officer at privacy@veloria.example.',
    },
  },
  {
    id: 'warranty',
    lang: 'en',
    title: 'Warranty',
    sections: {
      '': 'Every product has a two-year warranty. Veloria frames are guaranteed for ten years. Batteries are covered for two years or 500 charge cycles, whichever comes first. The warranty does not cover wear parts such as tyres, brake pads and chains.',
    },
  },
  {
    id: 'warranty-claim',
    lang: 'en',
    title: 'Making a warranty claim',
    sections: {
      '': 'Fill in the claim form with the serial number, a photo of the fault and your proof of purchase. Our workshop answers within 3 business days and collects the bike when a repair is needed.',
    },
  },
  {
    id: 'servicing',
    lang: 'en',
    title: 'Servicing and repairs',
    sections: {
      '': 'Our store workshops service any e-bike. The annual service costs €69 and includes a motor software update; a brake adjustment costs €15. Book a slot online; most repairs are ready within 48 hours.',
    },
  },
  {
    id: 'battery-care',
    lang: 'en',
    title: 'Battery care',
    sections: {
      '': 'Store the battery at 30 to 60% charge, between 10 and 25 °C. Do not leave it in direct sun or charge it below 0 °C. In winter, charge it fully once every three months to keep the cells healthy.',
    },
  },
  {
    id: 'stores',
    lang: 'en',
    title: 'Our stores',
    sections: {
      '': 'Visit us in Madrid (Calle de Atocha 42), Barcelona (Carrer de Pujades 120) and Valencia (Avenida del Puerto 8). Every store has a workshop and a test track.',
    },
  },
  {
    id: 'opening-hours',
    lang: 'en',
    title: 'Opening hours',
    sections: { '': 'Our stores open Monday to Friday from 10:00 to 20:00 and Saturday from 10:00 to 14:00. They are closed on Sundays and public holidays.' },
  },
  {
    id: 'test-rides',
    lang: 'en',
    title: 'Test rides',
    sections: { '': 'Book a free test ride of 30 minutes at any store. Bring an identity document; riders under 16 need an adult with them.' },
  },
  {
    id: 'sizing',
    lang: 'en',
    title: 'Choosing your frame size',
    sections: {
      '': 'Riders from 155 to 165 cm take size S, from 165 to 178 cm size M and from 178 to 190 cm size L. Between two sizes, measure your inseam: under 80 cm choose the smaller frame.',
    },
  },
  {
    id: 'assembly',
    lang: 'en',
    title: 'Assembling your bike',
    sections: {
      '': 'Bikes arrive 90% assembled. You fit the handlebar, the pedals and the front wheel, which takes about 20 minutes with the tools in the box. Charge the battery fully before the first ride.',
    },
  },
  {
    id: 'click-collect',
    lang: 'en',
    title: 'Click and collect',
    sections: {
      '': 'Choose Click and collect at checkout to pick up your order in a store for free. It is ready within two hours during opening hours and we keep it for seven days.',
    },
  },
  {
    id: 'contact',
    lang: 'en',
    title: 'Contact us',
    sections: { '': 'Write to help@veloria.example or call +34 910 000 000, Monday to Friday from 9:00 to 18:00. The chat on this site answers every day.' },
  },
  {
    id: 'insurance',
    lang: 'en',
    title: 'Theft insurance',
    sections: {
      '': 'Insure your e-bike against theft and accidental damage with our partner Ciclosure for €8 a month, for up to three years. Add it at checkout or within 30 days of purchase.',
    },
  },
  {
    id: 'trade-in',
    lang: 'en',
    title: 'Trade in your old bike',
    sections: {
      '': 'Bring your old bicycle to a store and get up to €300 of credit toward a new e-bike. Our mechanics assess it on the spot; any brand is accepted if it is roadworthy.',
    },
  },
  {
    id: 'business',
    lang: 'en',
    title: 'Business and fleet orders',
    sections: {
      '': 'Companies ordering five or more bikes get fleet prices and a dedicated account manager. We also arrange bike leasing for employees through salary sacrifice schemes.',
    },
  },
  {
    id: 'cancel',
    lang: 'en',
    title: 'Cancelling an order',
    sections: {
      '': 'You can cancel an order free of charge until it leaves the warehouse: open Account > Orders and press Cancel. Once it has been dispatched, refuse the delivery or return it instead.',
    },
  },

  {
    id: 'es-envios',
    lang: 'es',
    title: 'Plazos de entrega',
    sections: {
      '': 'Los pedidos realizados antes de las 14:00 en día laborable salen del almacén el mismo día. La entrega estándar tarda de 3 a 5 días laborables en la península y de 5 a 8 días al resto de la Unión Europea. No repartimos los domingos ni festivos.',
    },
  },
  {
    id: 'es-gastos',
    lang: 'es',
    title: 'Gastos de envío',
    sections: {
      '': 'El envío es gratuito en pedidos de más de 50 €. Los pedidos menores pagan 4,95 € por el envío estándar. Una bicicleta completa se envía en su caja por 39 €.',
    },
  },
  {
    id: 'es-devoluciones',
    lang: 'es',
    title: 'Devoluciones',
    sections: {
      '': 'Puedes devolver cualquier producto en los 30 días siguientes a la entrega. Los accesorios deben estar sin usar y en su embalaje original. Una bicicleta eléctrica se acepta si ha recorrido menos de 50 km.',
    },
  },
  {
    id: 'es-reembolsos',
    lang: 'es',
    title: 'Reembolsos',
    sections: {
      '': 'Te devolvemos el dinero en 5 días laborables desde que recibimos la devolución, con el mismo medio de pago. Los pedidos pagados con tarjeta regalo se reembolsan como saldo en la tienda.',
    },
  },
  {
    id: 'es-pagos',
    lang: 'es',
    title: 'Formas de pago',
    sections: {
      '': 'Aceptamos Visa, Mastercard, American Express, PayPal, Bizum, Apple Pay y Google Pay. La transferencia bancaria está disponible para pedidos de más de 1.000 €.',
    },
  },
  {
    id: 'es-financiacion',
    lang: 'es',
    title: 'Financiación',
    sections: {
      '': 'Con Klarna puedes pagar cualquier pedido en 3 plazos sin intereses. Las bicicletas eléctricas de más de 600 € se pueden financiar de 6 a 36 meses.',
    },
  },
  {
    id: 'es-garantia',
    lang: 'es',
    title: 'Garantía',
    sections: {
      '': 'Todos los productos tienen dos años de garantía. Los cuadros Veloria tienen diez años. Las baterías están cubiertas dos años o 500 ciclos de carga. La garantía no cubre piezas de desgaste como neumáticos, pastillas de freno y cadenas.',
    },
  },
  {
    id: 'es-tiendas',
    lang: 'es',
    title: 'Nuestras tiendas',
    sections: {
      '': 'Estamos en Madrid (Calle de Atocha 42), Barcelona (Carrer de Pujades 120) y Valencia (Avenida del Puerto 8). Todas las tiendas tienen taller y pista de pruebas.',
    },
  },
  {
    id: 'es-horarios',
    lang: 'es',
    title: 'Horarios de apertura',
    sections: { '': 'Las tiendas abren de lunes a viernes de 10:00 a 20:00 y los sábados de 10:00 a 14:00. Cerramos domingos y festivos.' },
  },
  {
    id: 'es-tallas',
    lang: 'es',
    title: 'Guía de tallas',
    sections: {
      '': 'Con una altura de 155 a 165 cm corresponde la talla S, de 165 a 178 cm la talla M y de 178 a 190 cm la talla L. Si estás entre dos tallas, mide tu entrepierna.',
    },
  },
  {
    id: 'es-regalo',
    lang: 'es',
    title: 'Tarjetas regalo',
    sections: {
      '': 'Las tarjetas regalo van de 25 € a 500 € y son válidas durante dos años. Introduce el código al pagar. No se pueden canjear por dinero en efectivo.',
    },
  },
  {
    id: 'es-contacto',
    lang: 'es',
    title: 'Contacto',
    sections: { '': 'Escríbenos a help@veloria.example o llama al +34 910 000 000, de lunes a viernes de 9:00 a 18:00. El chat responde todos los días.' },
  },
];

/** What every model's page of the manual says too (a page about 800 characters: one passage each). */
const handling = (model: string) =>
  `Switching on the ${model}: hold the power button for two seconds; press + and - to choose the assist level (Eco, Tour, Sport, Turbo). ` +
  `The lights of the ${model} switch on with the light button and stay on for ten seconds after it stops. ` +
  `Clean the ${model} with a damp cloth and oil the chain every 300 km; check the brake pads every 1,000 km. ` +
  `Use the ${model}'s own charger (42 V, 4 A) indoors and unplug it when its light turns green. Before each ride check the tyres, the brakes and that the battery is locked in place.`;

/** The owner's manual, crawled as a PDF (its title is the file's name): one page per model, then the error codes. */
export const MANUAL = {
  id: 'manual',
  file: 'veloria-owners-manual.pdf',
  pages: [
    'Veloria C3 city bike. Range: up to 70 km on one charge. Charging time: 4 hours from empty. Maximum load: 120 kg including the rider. Recommended tyre pressure: 3.5 to 4.5 bar. Battery: 418 Wh, removable with the frame key.' +
      ' ' +
      handling('Veloria C3'),
    'Veloria T5 trekking bike. Range: up to 110 km on one charge. Charging time: 5 hours from empty. Maximum load: 130 kg including the rider and luggage. Recommended tyre pressure: 3 to 4 bar. Battery: 625 Wh integrated in the down tube.' +
      ' ' +
      handling('Veloria T5'),
    'Veloria T7 trekking bike. Range: up to 150 km with its dual battery. Charging time: 6.5 hours for both packs. Maximum load: 140 kg. Recommended tyre pressure: 3 to 4 bar. Batteries: 2 × 500 Wh; the second pack sits behind the seat tube.' +
      ' ' +
      handling('Veloria T7'),
    'Veloria X9 cargo bike. Range: up to 80 km with a full load. Charging time: 5.5 hours. Maximum load: 200 kg, of which 80 kg in the front box. Recommended tyre pressure: 2.5 to 3.5 bar. Fit the child seat only in the front box.' +
      ' ' +
      handling('Veloria X9'),
    'Display error codes. E01: motor sensor fault, switch off and on again. E04: battery too hot or too cold, let it reach room temperature. E07: speed sensor not detected, check the magnet on the rear wheel. E09: throttle error, visit a workshop.',
  ],
};

/** FAQ entries (question → answer), added as the admin API adds them. */
export const FAQ: [string, string][] = [
  ['Can I ride my e-bike in the rain?', 'Yes. All Veloria bikes are IPX5 rated: rain and splashes are fine, but never clean them with a pressure washer.'],
  ['Do I need a licence for an e-bike?', 'No. Pedal-assisted bikes limited to 25 km/h need no licence, registration or insurance in Spain.'],
  ['How fast does the motor assist?', 'The motor assists up to 25 km/h, the legal limit for pedelecs in the EU. Above that you ride on your own power.'],
  ['Can I take the battery on a plane?', 'No. Airlines do not accept e-bike batteries over 160 Wh, and all our batteries are larger.'],
  ['Can I change my delivery address after ordering?', 'Yes, until the order leaves the warehouse: write to us with the order number and the new address.'],
  ['Do you sell spare batteries?', 'Yes. A spare 418 Wh battery for the C3 costs €449 and a 625 Wh battery for the T5 costs €549.'],
  ['Where do I find the serial number?', 'The serial number is engraved under the bottom bracket, where the cranks meet the frame.'],
  ['Do you match prices?', 'We match the price of any authorised Spanish dealer for the same model in stock; send us the link before you order.'],
  ['Can I order by phone?', 'Yes. Call +34 910 000 000 on weekdays and we take the order and the payment by card over the phone.'],
  ['Do you have a kids bike?', "Our smallest model is the C3 in size S, for riders from 155 cm. We do not sell children's bikes."],
  ['Can I add a child seat?', 'A rear child seat fits the C3 and the T5 on their rear rack. On the X9 it goes in the front box.'],
  ['Is there a loyalty programme?', 'Members of Veloria Club earn 1 point per euro spent; 100 points are worth €5 off your next order.'],
];

export const CLASSES = ['plain', 'chatty', 'typo', 'language', 'model', 'paraphrase', 'unanswerable'] as const;
export type QuestionClass = (typeof CLASSES)[number];

/**
 * [class, the customer's words, the terms a good judge would give (the content's words, translated,
 * synonyms), the passages that answer it: `page id`, `faq<n>` or `manual~<words the page holds>`; none: nothing answers it].
 */
export const QUESTIONS: [QuestionClass, string, string, string][] = [
  ['plain', 'How long does delivery take?', 'delivery times business days', 'delivery-times es-envios'],
  ['plain', 'How much does shipping cost?', 'shipping costs price', 'shipping-costs es-gastos'],
  ['plain', 'Do you ship to Switzerland?', 'international shipping Switzerland countries', 'international'],
  ['plain', 'How can I track my order?', 'tracking order carrier link', 'tracking'],
  ['plain', 'What is your return policy?', 'returns policy days', 'returns es-devoluciones'],
  ['plain', 'How do I return an item?', 'return item request label', 'return-process returns'],
  ['plain', 'When will I get my refund?', 'refund days payment method', 'refunds es-reembolsos'],
  ['plain', 'Can I exchange a product for another size?', 'exchange size colour', 'exchanges'],
  ['plain', 'My parcel arrived damaged', 'damaged parcel photos replacement', 'damaged'],
  ['plain', 'Which payment methods do you accept?', 'payment methods cards PayPal', 'payment es-pagos'],
  ['plain', 'Can I pay in instalments?', 'instalments Klarna financing', 'financing es-financiacion'],
  ['plain', 'How do I download an invoice?', 'invoice download VAT', 'invoices'],
  ['plain', 'How long is a gift card valid?', 'gift card valid years', 'gift-cards es-regalo'],
  ['plain', 'Can I use two discount codes?', 'discount code per order', 'promo-codes'],
  ['plain', 'How do I reset my password?', 'reset password forgot link', 'password'],
  ['plain', 'How do I delete my account?', 'delete account personal data', 'delete-account'],
  ['plain', 'What personal data do you store?', 'privacy personal data GDPR', 'privacy'],
  ['plain', 'How long is the warranty?', 'warranty years', 'warranty es-garantia'],
  ['plain', 'How do I make a warranty claim?', 'warranty claim form serial number', 'warranty-claim'],
  ['plain', 'How much is the annual service?', 'annual service price workshop', 'servicing'],
  ['plain', 'How should I store the battery?', 'battery storage charge temperature', 'battery-care'],
  ['plain', 'Where are your stores?', 'stores addresses Madrid Barcelona Valencia', 'stores es-tiendas'],
  ['plain', 'What are your opening hours?', 'opening hours stores', 'opening-hours es-horarios'],
  ['plain', 'Can I book a test ride?', 'test ride book store', 'test-rides'],
  ['plain', 'Which frame size should I choose?', 'frame size height', 'sizing es-tallas'],
  ['plain', 'Does the bike come assembled?', 'assembly assembled handlebar pedals', 'assembly'],
  ['plain', 'Can I pick up my order in a store?', 'click and collect pick up store', 'click-collect'],
  ['plain', 'What is your phone number?', 'contact phone email', 'contact es-contacto'],
  ['plain', 'Do you offer theft insurance?', 'theft insurance', 'insurance'],
  ['plain', 'Can I cancel my order?', 'cancel order', 'cancel'],

  [
    'chatty',
    'hi there!! so um I was just wondering how long delivery usually takes to get to me? thanks so much',
    'delivery times',
    'delivery-times es-envios',
  ],
  ['chatty', 'hello, quick question please, do u guys accept paypal or something like that?', 'payment methods PayPal', 'payment es-pagos'],
  ['chatty', 'hey hey, I wanna send back something I bought last week, what do I need to do??', 'return item how to', 'return-process returns'],
  [
    'chatty',
    'good morning! could you please tell me something about the warranty on the batteries? cheers',
    'battery warranty charge cycles',
    'warranty es-garantia',
  ],
  ['chatty', "ok so basically my password isn't working and I can't get in, help pls", 'reset password forgot', 'password'],
  ['chatty', "hiya, I'm kinda thinking about getting a bike but do you have shops where I can actually see them?", 'stores addresses', 'stores es-tiendas'],
  ['chatty', 'hello!!! are you guys open on saturday or nah', 'opening hours Saturday', 'opening-hours es-horarios'],
  ['chatty', "hey I'd really love to try one out before buying, is that a thing you do?", 'test ride', 'test-rides'],
  ['chatty', 'hi, sorry to bother, what happens with my money if I send it back?', 'refund returned', 'refunds es-reembolsos'],
  ['chatty', 'yo, how much do you charge for shipping stuff?', 'shipping costs', 'shipping-costs es-gastos'],
  ['chatty', "hi I'm 1.72 tall lol which size do I need?", 'frame size height cm', 'sizing es-tallas'],
  ['chatty', 'hello, just checking, can I still cancel, I ordered like an hour ago', 'cancel order', 'cancel'],
  ['chatty', 'hi there, my friend told me you do some kind of insurance for when your bike gets stolen?', 'theft insurance', 'insurance'],
  ['chatty', 'hey! is it possible to pay in like 3 parts or something??', 'instalments Klarna 3 payments', 'financing es-financiacion'],
  ['chatty', 'hi, hmm, I actually need an invoice with my company name on it, how does that work please', 'invoice company name tax ID', 'invoices'],
  ['chatty', "good afternoon! I'd like to know about the gift cards please, how much can I put on one?", 'gift card amounts', 'gift-cards es-regalo'],
  ['chatty', 'hey so the box came all smashed up, what now??', 'damaged parcel box', 'damaged'],
  ['chatty', 'hi, I basically just want to know if you guys give a discount on the first order, thanks!', 'discount first order newsletter', 'promo-codes'],
  ['chatty', 'hello hello, what do I actually have to put together myself when the bike comes?', 'assembly handlebar pedals wheel', 'assembly'],
  ['chatty', "hi! so I've got an old bike lying around, can I swap it for credit or something?", 'trade in old bike credit', 'trade-in'],
  ['chatty', 'heya, do you by any chance have the phone number of customer service?', 'contact phone', 'contact es-contacto'],
  ['chatty', 'hi!! how long does the battery of the T5 last on one charge, roughly?', 'Veloria T5 range charge', 'manual~Veloria T5'],

  ['typo', 'how long does delivry take', 'delivery times', 'delivery-times es-envios'],
  ['typo', 'shiping costs', 'shipping costs', 'shipping-costs es-gastos'],
  ['typo', 'retrun policy', 'returns policy', 'returns es-devoluciones'],
  ['typo', 'how do i get a refnud', 'refund', 'refunds es-reembolsos'],
  ['typo', 'wich payment metods do you acept', 'payment methods', 'payment es-pagos'],
  ['typo', 'can i pay in instalmets', 'instalments financing', 'financing es-financiacion'],
  ['typo', 'giftcard validty', 'gift card valid', 'gift-cards es-regalo'],
  ['typo', 'forgot my pasword', 'reset password', 'password'],
  ['typo', 'warrenty on the frame', 'warranty frame', 'warranty es-garantia'],
  ['typo', 'opening hourse', 'opening hours', 'opening-hours es-horarios'],
  ['typo', 'where are your storse', 'stores', 'stores es-tiendas'],
  ['typo', 'cancle my order', 'cancel order', 'cancel'],
  ['typo', 'tracking my ordr', 'tracking order', 'tracking'],
  ['typo', 'invocie download', 'invoice download', 'invoices'],
  ['typo', 'battery storrage temperature', 'battery storage temperature', 'battery-care'],
  ['typo', 'exhange for a bigger size', 'exchange size', 'exchanges'],
  ['typo', 'dicount code', 'discount code', 'promo-codes'],
  ['typo', 'theft insurence', 'theft insurance', 'insurance'],
  ['typo', 'test ryde', 'test ride', 'test-rides'],
  ['typo', 'click and colect', 'click and collect', 'click-collect'],
  ['typo', 'asembly instructions', 'assembly', 'assembly'],
  ['typo', 'delete my acount', 'delete account', 'delete-account'],

  ['language', '¿Cuánto tarda la entrega?', 'plazos de entrega días', 'es-envios delivery-times'],
  ['language', '¿Cuánto cuesta el envío?', 'gastos de envío', 'es-gastos shipping-costs'],
  ['language', '¿Cómo puedo devolver un producto?', 'devoluciones devolver producto', 'es-devoluciones return-process returns'],
  ['language', '¿Cuándo me devolvéis el dinero?', 'reembolsos dinero', 'es-reembolsos refunds'],
  ['language', '¿Aceptáis Bizum?', 'formas de pago Bizum', 'es-pagos payment'],
  ['language', '¿Puedo pagar a plazos?', 'financiación plazos Klarna', 'es-financiacion financing'],
  ['language', '¿Cuántos años de garantía tiene la batería?', 'garantía baterías años', 'es-garantia warranty'],
  ['language', '¿Dónde están vuestras tiendas?', 'tiendas direcciones', 'es-tiendas stores'],
  ['language', '¿Abrís los domingos?', 'horarios apertura domingos', 'es-horarios opening-hours'],
  ['language', '¿Qué talla necesito si mido 1,80?', 'guía de tallas altura', 'es-tallas sizing'],
  ['language', '¿Las tarjetas regalo caducan?', 'tarjetas regalo válidas años', 'es-regalo gift-cards'],
  ['language', '¿Cuál es vuestro teléfono?', 'contacto teléfono', 'es-contacto contact'],
  ['language', 'Combien coûte la livraison ?', 'shipping costs', 'shipping-costs es-gastos'],
  ['language', "Quels sont vos horaires d'ouverture ?", 'opening hours', 'opening-hours es-horarios'],
  ['language', 'Comment retourner un article ?', 'return item', 'return-process returns es-devoluciones'],
  ['language', 'Wie lange dauert die Lieferung?', 'delivery times', 'delivery-times es-envios'],
  ['language', 'Kann ich mit PayPal bezahlen?', 'payment methods PayPal', 'payment es-pagos'],
  ['language', 'Wie lange gilt die Garantie?', 'warranty years', 'warranty es-garantia'],
  ['language', 'Quanto tempo demora a entrega?', 'delivery times', 'delivery-times es-envios'],
  ['language', 'Posso pagar com Apple Pay?', 'payment methods Apple Pay', 'payment es-pagos'],
  ['language', '¿Cómo restablezco mi contraseña?', 'reset password forgot', 'password'],
  ['language', '¿Puedo cancelar mi pedido?', 'cancel order', 'cancel'],

  ['model', 'What is the range of the T7?', 'Veloria T7 range km', 'manual~Veloria T7'],
  ['model', 'How long does the C3 take to charge?', 'Veloria C3 charging time', 'manual~Veloria C3'],
  ['model', 'Maximum load of the X9?', 'Veloria X9 maximum load', 'manual~Veloria X9'],
  ['model', 'tyre pressure for the T5', 'Veloria T5 tyre pressure', 'manual~Veloria T5'],
  ['model', 'What does error E04 mean?', 'error code E04', 'manual~E04'],
  ['model', 'E07 on my display', 'error code E07 speed sensor', 'manual~E07'],
  ['model', 'How big is the battery in the C3?', 'Veloria C3 battery Wh', 'manual~Veloria C3'],
  ['model', 'Where is the second battery on the T7?', 'Veloria T7 second battery pack', 'manual~Veloria T7'],
  ['model', 'How much weight can the C3 carry?', 'Veloria C3 maximum load kg', 'manual~Veloria C3'],
  ['model', 'Can I put a child seat on the X9?', 'child seat X9 front box', 'manual~Veloria X9 faq10'],
  ['model', 'How much is a spare battery for the T5?', 'spare battery T5 price', 'faq5'],
  ['model', 'T7 charging time', 'Veloria T7 charging time', 'manual~Veloria T7'],
  ['model', 'error E01', 'error code E01 motor sensor', 'manual~E01'],
  ['model', 'What range does the X9 have fully loaded?', 'Veloria X9 range full load', 'manual~Veloria X9'],
  ['model', 'T5 max load with luggage', 'Veloria T5 maximum load luggage', 'manual~Veloria T5'],
  ['model', 'E09 throttle', 'error code E09 throttle', 'manual~E09'],
  ['model', 'C3 tyre pressure', 'Veloria C3 tyre pressure', 'manual~Veloria C3'],
  ['model', 'Is the T5 battery removable?', 'Veloria T5 battery integrated removable', 'manual~Veloria T5'],
  ['model', 'spare battery C3 price', 'spare battery C3', 'faq5'],
  ['model', 'How many Wh is the T7 battery?', 'Veloria T7 batteries Wh', 'manual~Veloria T7'],

  ['paraphrase', "my parcel hasn't turned up yet, where is it right now?", 'tracking order carrier link', 'tracking'],
  ['paraphrase', "I can't remember how to get into my profile", 'forgot password reset sign-in', 'password'],
  ['paraphrase', 'Is postage included?', 'shipping costs free', 'shipping-costs es-gastos'],
  ['paraphrase', 'Could I spread the cost across a year?', 'instalments financing months Klarna', 'financing es-financiacion'],
  ['paraphrase', 'Who looks after my details, and do you pass them on?', 'privacy personal data sell', 'privacy'],
  ['paraphrase', 'What if it breaks down after some time?', 'warranty fault years', 'warranty warranty-claim es-garantia'],
  ['paraphrase', 'When are you shut?', 'opening hours closed', 'opening-hours es-horarios'],
  ['paraphrase', "I'm 1.70m, which one fits me?", 'frame size height cm', 'sizing es-tallas'],
  ['paraphrase', 'Where can I come and see you in person?', 'stores addresses visit', 'stores es-tiendas'],
  ['paraphrase', "I'd like my cash back", 'refund money payment method', 'refunds es-reembolsos'],
  ['paraphrase', 'Someone nicked my ride, am I covered?', 'theft insurance', 'insurance'],
  ['paraphrase', 'How do I look after the power pack in cold weather?', 'battery care winter charge temperature', 'battery-care'],
  [
    'paraphrase',
    "Can I get my money back on something I just don't want anymore?",
    'returns policy return product days',
    'returns es-devoluciones return-process',
  ],
  ['paraphrase', 'Can I try before I buy?', 'test ride book store', 'test-rides'],

  ['unanswerable', 'Do you rent bikes by the day?', 'bike rental day', ''],
  ['unanswerable', 'Is there a student discount?', 'student discount', ''],
  ['unanswerable', 'Do you sell electric scooters?', 'electric scooters', ''],
  ['unanswerable', 'How much does a helmet cost?', 'helmet price', ''],
  ['unanswerable', 'Who is the CEO of Veloria?', 'CEO company management', ''],
  ['unanswerable', 'Do you offer bike fitting sessions?', 'bike fitting session', ''],
  ['unanswerable', 'What is the weight of the T5?', 'Veloria T5 weight kg', ''],
  ['unanswerable', 'Does the C3 have a suspension fork?', 'Veloria C3 suspension fork', ''],
  ['unanswerable', 'Can I update the motor software myself at home?', 'motor software update', ''],
  ['unanswerable', 'How do I switch the display to miles?', 'display units miles', ''],
  ['unanswerable', 'Do you have a mobile app?', 'mobile app', ''],
  ['unanswerable', 'Do you offer gift wrapping?', 'gift wrapping', ''],
  ['unanswerable', 'What is the wifi password in the store?', 'store wifi password', ''],
  ['unanswerable', 'Do you sell second-hand e-bikes?', 'used second-hand bikes', ''],
  ['unanswerable', 'How do I become a dealer?', 'dealer partnership', ''],
  ['unanswerable', 'Are there job openings at the Madrid store?', 'jobs careers Madrid store', ''],
  ['unanswerable', 'What tyre size does the X9 use?', 'Veloria X9 tyre size', ''],
  ['unanswerable', 'Can I charge the battery with a car charger?', 'charge battery car charger', ''],
  ['unanswerable', 'Does the T7 come in red?', 'Veloria T7 colours red', ''],
  ['unanswerable', 'Do you organise group rides?', 'group rides events', ''],
  ['unanswerable', 'How do I pair the bike with my phone over Bluetooth?', 'bluetooth phone app', ''],
  ['unanswerable', 'How often is the newsletter sent?', 'newsletter frequency', ''],
  ['unanswerable', 'Can I leave my bike at the store overnight?', 'store bike parking overnight', ''],
  ['unanswerable', 'Do you sell rain covers for the cargo bike?', 'X9 cargo rain cover accessories', ''],
  ['unanswerable', 'How many employees does Veloria have?', 'company employees staff', ''],
  ['unanswerable', 'What is the carbon footprint of a delivery?', 'delivery carbon emissions', ''],
  ['unanswerable', 'Does the warranty transfer to a new owner?', 'warranty transfer new owner', ''],
  ['unanswerable', 'How many years does the motor last?', 'motor lifespan years', ''],
  ['unanswerable', '¿Tenéis bicicletas de alquiler?', 'alquiler bicicletas', ''],
  ['unanswerable', '¿Hacéis descuento a estudiantes?', 'descuento estudiantes', ''],
];

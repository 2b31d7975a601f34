/**
 * A small fictional help center (Northwind Outfitters) with customer questions and the article
 * that answers each, for the knowledge bench's recall@5: `terms` is what a judge would give as
 * search terms (the customer's words expanded into the help center's vocabulary).
 */
export const ARTICLES: { id: string; title: string; text: string }[] = [
  {
    id: 'returns',
    title: 'Returns policy',
    text: '# Returns policy\n\n## Return window\n\nUnworn items can be returned within 30 days of delivery. Sale items within 14 days.\n\n## How to return\n\nPrint the return label from your account and drop the parcel at any post office.',
  },
  {
    id: 'refunds',
    title: 'Refunds',
    text: '# Refunds\n\n## Refund times\n\nRefunds reach your original payment method within 5 to 7 business days after the warehouse receives the return.',
  },
  {
    id: 'delivery',
    title: 'Delivery times',
    text: '# Delivery times\n\n## United Kingdom\n\nStandard shipping takes 2 to 3 business days; express shipping arrives next business day.\n\n## Europe\n\nShipping to Austria, Germany and France takes 4 to 6 business days.',
  },
  {
    id: 'countries',
    title: 'Countries we ship to',
    text: '# Countries we ship to\n\nWe ship to every country of the European Union, the United Kingdom, Norway and Switzerland. We do not ship to the United States or Canada.',
  },
  {
    id: 'shipping-cost',
    title: 'Shipping costs',
    text: '# Shipping costs\n\nStandard shipping is free on orders over 50 euros; below that it costs 4.95 euros. Express shipping costs 9.95 euros.',
  },
  {
    id: 'sizes',
    title: 'Size guide',
    text: '# Size guide\n\n## Jackets\n\nJackets run large: between two sizes, choose the smaller. Measure your chest at its widest point.\n\n## Boots\n\nBoots run true to size.',
  },
  {
    id: 'care',
    title: 'Caring for waterproof jackets',
    text: '# Caring for waterproof jackets\n\nWash at 30 degrees with a technical detergent, no fabric softener. Reproof every ten washes.',
  },
  {
    id: 'warranty',
    title: 'Warranty',
    text: '# Warranty\n\nEvery product carries a two-year warranty against manufacturing defects from the date of purchase. Keep your receipt.',
  },
  {
    id: 'payment',
    title: 'Payment methods',
    text: '# Payment methods\n\nWe accept Visa, Mastercard, American Express, PayPal and Klarna. Apple Pay works on the mobile site.',
  },
  {
    id: 'gift-cards',
    title: 'Gift cards',
    text: '# Gift cards\n\nGift cards come in values from 10 to 200 euros, are valid for two years and can be used online and in our shops.',
  },
  { id: 'stores', title: 'Our shops', text: '# Our shops\n\nOur shops in Leeds and Manchester open Monday to Saturday from 9am to 6pm, Sunday 11am to 4pm.' },
  {
    id: 'click-collect',
    title: 'Click and collect',
    text: '# Click and collect\n\nOrder online and pick up in a shop: free, ready within 2 hours during opening times.',
  },
  {
    id: 'order-change',
    title: 'Changing or cancelling an order',
    text: '# Changing or cancelling an order\n\nYou can change or cancel an order within one hour of placing it from your account. After that it is packed.',
  },
  {
    id: 'repairs',
    title: 'Repairs',
    text: '# Repairs\n\nWe repair zips, seams and torn fabric on our jackets for a flat fee of 15 euros; it takes about three weeks.',
  },
  {
    id: 'discounts',
    title: 'Student and loyalty discounts',
    text: '# Student and loyalty discounts\n\nStudents get 10 percent off with a verified student account. Loyalty members collect one point per euro spent.',
  },
];

export const QUESTIONS: { question: string; terms: string; answer: string }[] = [
  { question: 'how long will my parcel take?', terms: 'delivery times shipping days', answer: 'delivery' },
  { question: 'when do I get my money back?', terms: 'refund times payment method', answer: 'refunds' },
  { question: 'can I send back a jacket I bought 3 weeks ago?', terms: 'return window days', answer: 'returns' },
  { question: 'do you deliver to Austria?', terms: 'shipping Austria delivery times', answer: 'delivery' },
  { question: 'do you ship to the US?', terms: 'countries ship United States', answer: 'countries' },
  { question: 'is postage free?', terms: 'shipping costs free', answer: 'shipping-cost' },
  { question: 'what size should I get, I am between M and L', terms: 'size guide jackets between sizes', answer: 'sizes' },
  { question: 'can I put my rain jacket in the washing machine?', terms: 'wash waterproof jacket care', answer: 'care' },
  { question: 'my zip broke after a year', terms: 'warranty manufacturing defects repair zip', answer: 'warranty' },
  { question: 'do you take PayPal?', terms: 'payment methods PayPal', answer: 'payment' },
  { question: 'I want to buy a present voucher', terms: 'gift cards values', answer: 'gift-cards' },
  { question: 'when are you open on Sunday?', terms: 'shops opening hours Sunday', answer: 'stores' },
  { question: 'can I pick up my order in Leeds?', terms: 'click and collect pick up shop', answer: 'click-collect' },
  { question: 'I ordered the wrong colour, can I change it?', terms: 'change cancel order', answer: 'order-change' },
  { question: 'can you fix a torn sleeve?', terms: 'repairs torn fabric fee', answer: 'repairs' },
  { question: 'is there a student discount?', terms: 'student discount percent', answer: 'discounts' },
  { question: 'how much is express?', terms: 'express shipping costs', answer: 'shipping-cost' },
  { question: 'do boots fit normally?', terms: 'size guide boots true to size', answer: 'sizes' },
  { question: 'how do I print the return label?', terms: 'how to return label post office', answer: 'returns' },
  { question: 'can I pay in instalments?', terms: 'payment methods Klarna', answer: 'payment' },
];

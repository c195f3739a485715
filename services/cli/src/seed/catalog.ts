import type { PlanInterval } from "./time.ts";

/** The fixed vocabulary the generator draws from: people, products, prices, failures. */

export const FIRST_NAMES = [
  "Olivia",
  "Liam",
  "Emma",
  "Noah",
  "Amelia",
  "Oliver",
  "Sophia",
  "Elijah",
  "Isabella",
  "James",
  "Ava",
  "William",
  "Mia",
  "Benjamin",
  "Charlotte",
  "Lucas",
  "Harper",
  "Henry",
  "Evelyn",
  "Theodore",
  "Léa",
  "Hugo",
  "Chloé",
  "Louis",
  "Zoë",
  "Mateo",
  "Lucía",
  "Santiago",
  "Sofía",
  "Diego",
  "Valentina",
  "Hannah",
  "Lukas",
  "Leonie",
  "Finn",
  "Aisha",
  "Omar",
  "Fatima",
  "Yusuf",
  "Mariam",
  "Haruto",
  "Yui",
  "Sota",
  "Hina",
  "Ren",
  "Aarav",
  "Priya",
  "Arjun",
  "Ananya",
  "Wei",
  "Mei",
  "Jian",
  "Xin",
  "Kwame",
  "Ama",
  "Chidi",
  "Ngozi",
  "Siobhán",
  "Niamh",
  "Seán",
  "Björn",
  "Astrid",
  "Joaquín",
  "Inês",
  "João",
  "Małgorzata",
  "Piotr",
  "Dmitri",
  "Olga",
  "Grace",
  "Ethan",
  "Chloe",
  "Daniel",
  "Ruby",
] as const;

export const LAST_NAMES = [
  "Smith",
  "Johnson",
  "Williams",
  "Brown",
  "Jones",
  "Garcia",
  "Miller",
  "Davis",
  "Rodriguez",
  "Martinez",
  "Wilson",
  "Anderson",
  "Taylor",
  "Thomas",
  "Moore",
  "Martin",
  "Jackson",
  "Thompson",
  "White",
  "Harris",
  "Clark",
  "Lewis",
  "Müller",
  "Schmidt",
  "Schneider",
  "Fischer",
  "Weber",
  "Dubois",
  "Lefèvre",
  "Moreau",
  "Laurent",
  "Rossi",
  "Russo",
  "Ferrari",
  "Esposito",
  "Fernández",
  "González",
  "López",
  "Pérez",
  "Sánchez",
  "Silva",
  "Santos",
  "Oliveira",
  "Nakamura",
  "Tanaka",
  "Suzuki",
  "Watanabe",
  "Kim",
  "Lee",
  "Park",
  "Chen",
  "Wang",
  "Li",
  "Zhang",
  "Patel",
  "Sharma",
  "Singh",
  "Gupta",
  "Al-Sabah",
  "Haddad",
  "Khan",
  "Okafor",
  "Mensah",
  "Nowak",
  "Kowalski",
  "Ivanov",
  "O'Brien",
  "Murphy",
  "Kelly",
  "Andersson",
  "Johansson",
  "Nielsen",
  "de Jong",
  "van Dijk",
] as const;

export const EMAIL_DOMAINS = [
  ["gmail.com", 40],
  ["outlook.com", 12],
  ["yahoo.com", 10],
  ["icloud.com", 10],
  ["hotmail.com", 6],
  ["proton.me", 4],
  ["gmx.de", 4],
  ["orange.fr", 3],
  ["example.com", 6],
  ["fastmail.com", 2],
  ["yahoo.co.jp", 3],
] as const satisfies readonly (readonly [string, number])[];

export interface Product {
  readonly name: string;
  readonly sku: string;
  /** What goes in each box: line item titles and their SKU suffixes. */
  readonly items: readonly (readonly [sku: string, title: string])[];
}

export const PRODUCTS: readonly Product[] = [
  {
    name: "Coffee Club",
    sku: "COF",
    items: [
      ["ETH-250", "Ethiopia Yirgacheffe 250 g"],
      ["COL-250", "Colombia Huila 250 g"],
      ["DEC-250", "Swiss Water Decaf 250 g"],
      ["FLT-100", "Paper filters ×100"],
    ],
  },
  {
    name: "Tea Leaves",
    sku: "TEA",
    items: [
      ["SEN-100", "Sencha 100 g"],
      ["ASS-100", "Assam Breakfast 100 g"],
      ["CHM-050", "Chamomile 50 g"],
    ],
  },
  {
    name: "Razor Refills",
    sku: "RAZ",
    items: [
      ["BLD-4", "Blade cartridges ×4"],
      ["GEL-150", "Shave gel 150 ml"],
    ],
  },
  {
    name: "Pet Food Plus",
    sku: "PET",
    items: [
      ["DRY-2K", "Dry food 2 kg"],
      ["WET-12", "Wet food ×12"],
      ["TRT-200", "Dental treats 200 g"],
    ],
  },
  {
    name: "Vitamin Pack",
    sku: "VIT",
    items: [
      ["D3-60", "Vitamin D3 ×60"],
      ["MAG-90", "Magnesium ×90"],
      ["OMG-60", "Omega-3 ×60"],
    ],
  },
  {
    name: "Book Box",
    sku: "BKB",
    items: [
      ["FIC-1", "Fiction pick of the month"],
      ["NF-1", "Non-fiction pick"],
      ["MRK-1", "Bookmark set"],
    ],
  },
  {
    name: "Meal Kit",
    sku: "MEA",
    items: [
      ["VEG-2", "Vegetarian meals for 2"],
      ["CLS-2", "Classic meals for 2"],
      ["DES-1", "Dessert add-on"],
    ],
  },
  {
    name: "Flower Delivery",
    sku: "FLW",
    items: [
      ["SEA-M", "Seasonal bouquet (M)"],
      ["SEA-L", "Seasonal bouquet (L)"],
      ["VAS-1", "Glass vase"],
    ],
  },
];

/** How plans bill, with how common each is among subscriptions. */
export const INTERVAL_OPTIONS = [
  { interval: "MONTH", count: 1, label: "Monthly", weight: 40 },
  { interval: "MONTH", count: 3, label: "Quarterly", weight: 12 },
  { interval: "MONTH", count: 6, label: "Every 6 months", weight: 6 },
  { interval: "YEAR", count: 1, label: "Yearly", weight: 18 },
  { interval: "WEEK", count: 1, label: "Weekly", weight: 10 },
  { interval: "WEEK", count: 2, label: "Every 2 weeks", weight: 8 },
  { interval: "DAY", count: 1, label: "Daily", weight: 3 },
  { interval: "DAY", count: 30, label: "Every 30 days", weight: 3 },
] as const satisfies readonly { interval: PlanInterval; count: number; label: string; weight: number }[];

export type Currency = "USD" | "EUR" | "GBP" | "JPY" | "KWD" | "CAD" | "AUD";

export interface CurrencyInfo {
  /** ISO 4217 minor digits. */
  readonly digits: number;
  /** Nice per-box prices in minor units, cheapest first. */
  readonly prices: readonly number[];
  /** Flat shipping in minor units. */
  readonly shipping: number;
  /** Sales tax / VAT rate, included in the price. */
  readonly taxRate: number;
}

export const CURRENCIES: Readonly<Record<Currency, CurrencyInfo>> = {
  USD: { digits: 2, prices: [999, 1499, 1999, 2499, 2999, 4999], shipping: 499, taxRate: 0.0725 },
  EUR: { digits: 2, prices: [899, 1290, 1790, 2290, 2790, 4490], shipping: 490, taxRate: 0.2 },
  GBP: { digits: 2, prices: [799, 1199, 1499, 1999, 2499, 3999], shipping: 395, taxRate: 0.2 },
  JPY: { digits: 0, prices: [1000, 1500, 2200, 2800, 3300, 5500], shipping: 500, taxRate: 0.1 },
  KWD: { digits: 3, prices: [3000, 4500, 6250, 7500, 9000, 15000], shipping: 1500, taxRate: 0 },
  CAD: { digits: 2, prices: [1299, 1899, 2499, 3299, 3999, 6499], shipping: 699, taxRate: 0.13 },
  AUD: { digits: 2, prices: [1395, 1995, 2695, 3495, 4295, 6995], shipping: 895, taxRate: 0.1 },
};

/** The currencies of a run's plans, in order: every required one appears in the first five. */
export const PLAN_CURRENCIES: readonly Currency[] = ["USD", "EUR", "GBP", "JPY", "KWD", "USD", "CAD", "EUR", "USD", "AUD", "GBP", "USD"];

export const FAILURES = [
  ["card_declined", "Your card was declined.", 40],
  ["insufficient_funds", "Your card has insufficient funds.", 30],
  ["expired_card", "Your card has expired.", 12],
  ["incorrect_cvc", "Your card's security code is incorrect.", 6],
  ["authentication_required", "The payment requires authentication (3-D Secure).", 7],
  ["processing_error", "An error occurred while processing your card. Try again later.", 5],
] as const;

export const CANCELLATION_REASONS = [
  ["too_expensive", 25],
  ["not_using_enough", 22],
  ["switched_to_competitor", 10],
  ["quality_issues", 8],
  ["shipping_problems", 6],
  ["moving_abroad", 4],
  ["payment_failed_repeatedly", 10],
  ["other", 15],
] as const satisfies readonly (readonly [string, number])[];

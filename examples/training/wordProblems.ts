// Worked word problems (the bundled family's task): seeded templates, their worked answers, the final-number grader, and splits disjoint by problem.

/** One problem: a question, its worked answer (reasoning, then "The answer is N."), and the key that splits keep apart. */
export interface WordProblem {
  /** Template name, e.g. "groups-give". */
  template: string;
  question: string;
  /** A few sentences of reasoning around the arithmetic steps, then the final line. */
  answer: string;
  final: number;
  /**
   * Template and numbers, e.g. "groups-give:7,6,9": two problems with the same key differ only in names
   * and objects, so a split keeps out every key of the others (the arithmetic of a held-out problem is
   * never trained in the same template).
   */
  key: string;
}

/** mulberry32: a small, well-mixed 32-bit generator, so a seed gives the same problems in every runtime. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = () => number;
const int = (r: Rng, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

interface Person {
  name: string;
  they: string;
  their: string;
}
const PEOPLE: Person[] = [
  ...['Mia', 'Ava', 'Lena', 'Sofia', 'Nora', 'Grace', 'Chloe', 'Ruth', 'Hana', 'Priya', 'Zoe', 'Elena', 'Amara', 'Julia', 'Ines', 'Maya'].map((name) => ({
    name,
    they: 'she',
    their: 'her',
  })),
  ...['Leo', 'Omar', 'Ben', 'Tom', 'Ravi', 'Sam', 'Jonas', 'Diego', 'Kai', 'Felix', 'Hugo', 'Noah', 'Ethan', 'Marco', 'Yusuf', 'Liam'].map((name) => ({
    name,
    they: 'he',
    their: 'his',
  })),
];

/** Countable things and what holds several of them. */
interface Thing {
  one: string;
  many: string;
  pack: string;
  packs: string;
}
const THINGS: Thing[] = [
  ['apple', 'apples', 'basket', 'baskets'],
  ['pencil', 'pencils', 'box', 'boxes'],
  ['marble', 'marbles', 'bag', 'bags'],
  ['sticker', 'stickers', 'sheet', 'sheets'],
  ['cookie', 'cookies', 'tray', 'trays'],
  ['egg', 'eggs', 'carton', 'cartons'],
  ['book', 'books', 'shelf', 'shelves'],
  ['card', 'cards', 'pack', 'packs'],
  ['shell', 'shells', 'jar', 'jars'],
  ['stamp', 'stamps', 'album page', 'album pages'],
  ['orange', 'oranges', 'crate', 'crates'],
  ['muffin', 'muffins', 'tin', 'tins'],
  ['bead', 'beads', 'string', 'strings'],
  ['plant', 'plants', 'row', 'rows'],
  ['toy car', 'toy cars', 'case', 'cases'],
  ['candle', 'candles', 'box', 'boxes'],
  ['brick', 'bricks', 'stack', 'stacks'],
  ['flower', 'flowers', 'bunch', 'bunches'],
].map(([one, many, pack, packs]) => ({ one, many, pack, packs }));

/** Amounts with a unit, and how one gains them over time. */
interface Measure {
  unit: string;
  per: string;
  verb: string;
}
const MEASURES: Measure[] = [
  { unit: 'kilometres', per: 'day', verb: 'walks' },
  { unit: 'pages', per: 'day', verb: 'reads' },
  { unit: 'dollars', per: 'week', verb: 'saves' },
  { unit: 'litres of water', per: 'day', verb: 'drinks' },
  { unit: 'laps', per: 'day', verb: 'swims' },
  { unit: 'minutes', per: 'day', verb: 'practises the piano for' },
  { unit: 'points', per: 'game', verb: 'scores' },
  { unit: 'photos', per: 'day', verb: 'takes' },
];
const PLACES = ['at the market', 'at school', 'at the fair', 'in the garden', 'at the shop', 'at the library', 'at the park', 'at home'];
const FRIENDS = ['friends', 'classmates', 'cousins', 'neighbours', 'teammates'];

interface Drawn {
  nums: number[];
  question: string;
  steps: string[];
  final: number;
}
type Template = (r: Rng) => Drawn;

/** Two different people. */
function two(r: Rng): [Person, Person] {
  const a = pick(r, PEOPLE);
  let b = pick(r, PEOPLE);
  while (b.name === a.name) b = pick(r, PEOPLE);
  return [a, b];
}

const cap = (s: string): string => s[0].toUpperCase() + s.slice(1);

export const TEMPLATES: Record<string, Template> = {
  'groups-give': (r) => {
    const p = pick(r, PEOPLE),
      t = pick(r, THINGS);
    const a = int(r, 2, 9),
      b = int(r, 12, 99),
      c = int(r, 1, a * b - 1);
    const total = a * b;
    return {
      nums: [a, b, c],
      final: total - c,
      question: `${p.name} has ${a} ${t.packs} of ${t.many}. Each ${t.pack} holds ${b} ${t.many}. ${cap(p.they)} gives ${c} ${t.many} to a friend. How many ${t.many} does ${p.name} have left?`,
      steps: [
        `${p.name} has ${a} ${t.packs} with ${b} ${t.many} in each, so ${p.they} has ${a} * ${b} = ${total} ${t.many}.`,
        `After giving away ${c}, ${p.they} has ${total} - ${c} = ${total - c} ${t.many} left.`,
      ],
    };
  },
  'buy-more': (r) => {
    const p = pick(r, PEOPLE),
      t = pick(r, THINGS),
      place = pick(r, PLACES);
    const a = int(r, 2, 9),
      b = int(r, 12, 99),
      c = int(r, 10, 99);
    const total = a * b;
    return {
      nums: [a, b, c],
      final: total + c,
      question: `${p.name} buys ${a} ${t.packs} of ${t.many} ${place}. There are ${b} ${t.many} in each ${t.pack}. Later ${p.they} finds ${c} more ${t.many}. How many ${t.many} does ${p.name} have now?`,
      steps: [
        `The ${t.packs} hold ${a} * ${b} = ${total} ${t.many}.`,
        `With the ${c} ${p.they} found, ${p.name} has ${total} + ${c} = ${total + c} ${t.many}.`,
      ],
    };
  },
  'share-equally': (r) => {
    const p = pick(r, PEOPLE),
      t = pick(r, THINGS),
      who = pick(r, FRIENDS);
    const c = int(r, 2, 9),
      each = int(r, 12, 60),
      a = int(r, 1, c * each - 1),
      b = c * each - a;
    return {
      nums: [a, b, c],
      final: each,
      question: `${p.name} has ${a} ${t.many} and gets ${b} more ${t.many}. ${cap(p.they)} shares all of them equally among ${c} ${who}. How many ${t.many} does each of the ${who} get?`,
      steps: [`${p.name} has ${a} + ${b} = ${a + b} ${t.many} in all.`, `Shared among ${c} ${who}, each gets ${a + b} / ${c} = ${each} ${t.many}.`],
    };
  },
  'rows-extra-broken': (r) => {
    const p = pick(r, PEOPLE),
      t = pick(r, THINGS);
    const a = int(r, 2, 9),
      b = int(r, 12, 99),
      c = int(r, 10, 99),
      d = int(r, 1, Math.min(99, a * b + c - 1));
    const total = a * b,
      more = total + c;
    return {
      nums: [a, b, c, d],
      final: more - d,
      question: `${p.name} puts ${t.many} in ${a} ${t.packs} with ${b} in each. ${cap(p.they)} keeps ${c} extra ${t.many} on the side. Then ${d} of the ${t.many} get lost. How many ${t.many} are left?`,
      steps: [
        `The ${t.packs} hold ${a} * ${b} = ${total} ${t.many}.`,
        `With the ${c} extra, there are ${total} + ${c} = ${more} ${t.many}.`,
        `After losing ${d}, ${more} - ${d} = ${more - d} ${t.many} are left.`,
      ],
    };
  },
  'change-back': (r) => {
    const p = pick(r, PEOPLE),
      t = pick(r, THINGS),
      place = pick(r, PLACES);
    const a = int(r, 2, 9),
      b = int(r, 12, 60),
      d = int(r, 10, 99),
      cost = a * b,
      all = cost + d;
    const c = pick(
      r,
      [100, 200, 500, 1000].filter((x) => x > all),
    );
    return {
      nums: [a, b, d, c],
      final: c - all,
      question: `${p.name} buys ${a} ${t.many} ${place} for ${b} dollars each, and a bag for ${d} dollars. ${cap(p.they)} pays with ${c} dollars. How much change does ${p.name} get back?`,
      steps: [
        `The ${t.many} cost ${a} * ${b} = ${cost} dollars.`,
        `With the bag, ${p.they} spends ${cost} + ${d} = ${all} dollars.`,
        `The change is ${c} - ${all} = ${c - all} dollars.`,
      ],
    };
  },
  'rate-then-more': (r) => {
    const p = pick(r, PEOPLE),
      m = pick(r, MEASURES);
    const a = int(r, 12, 99),
      b = int(r, 2, 9),
      c = int(r, 10, 99);
    const total = a * b;
    return {
      nums: [a, b, c],
      final: total + c,
      question: `${p.name} ${m.verb} ${a} ${m.unit} each ${m.per} for ${b} ${m.per}s. On the last ${m.per} ${p.they} adds another ${c} ${m.unit}. How many ${m.unit} is that in all?`,
      steps: [
        `In ${b} ${m.per}s ${p.name} ${m.verb} ${a} * ${b} = ${total} ${m.unit}.`,
        `Adding the extra ${c} gives ${total} + ${c} = ${total + c} ${m.unit}.`,
      ],
    };
  },
  'rate-minus-spent': (r) => {
    const p = pick(r, PEOPLE),
      t = pick(r, THINGS);
    const a = int(r, 12, 99),
      b = int(r, 2, 9),
      c = int(r, 1, a * b - 1);
    const total = a * b;
    return {
      nums: [a, b, c],
      final: total - c,
      question: `Every day ${p.name} collects ${a} ${t.many}. After ${b} days ${p.they} uses ${c} of them for a project. How many ${t.many} does ${p.they} still have?`,
      steps: [`In ${b} days ${p.name} collects ${a} * ${b} = ${total} ${t.many}.`, `After using ${c}, ${p.they} has ${total} - ${c} = ${total - c} ${t.many}.`],
    };
  },
  'more-than-together': (r) => {
    const [p, q] = two(r),
      t = pick(r, THINGS);
    const a = int(r, 50, 399),
      b = int(r, 20, 199);
    const qs = a + b;
    return {
      nums: [a, b],
      final: a + qs,
      question: `${p.name} has ${a} ${t.many}. ${q.name} has ${b} more ${t.many} than ${p.name}. How many ${t.many} do they have together?`,
      steps: [`${q.name} has ${a} + ${b} = ${qs} ${t.many}.`, `Together they have ${a} + ${qs} = ${a + qs} ${t.many}.`],
    };
  },
  'times-as-many-more': (r) => {
    const [p, q] = two(r),
      t = pick(r, THINGS);
    const a = int(r, 12, 99),
      c = int(r, 2, 9),
      d = int(r, 10, 150);
    const qs = a * c;
    return {
      nums: [a, c, d],
      final: qs + d - a,
      question: `${p.name} has ${a} ${t.many}. ${q.name} has ${c} times as many ${t.many} as ${p.name}, and then finds ${d} more. How many more ${t.many} than ${p.name} does ${q.name} have now?`,
      steps: [
        `${q.name} starts with ${a} * ${c} = ${qs} ${t.many}.`,
        `After finding ${d}, ${q.they} has ${qs} + ${d} = ${qs + d} ${t.many}.`,
        `That is ${qs + d} - ${a} = ${qs + d - a} more than ${p.name}.`,
      ],
    };
  },
  'bake-eat-bag': (r) => {
    const p = pick(r, PEOPLE),
      t = pick(r, THINGS);
    // redraw until the total splits as a * b with both in [2, 15] (a few draws; the same for a seed)
    for (;;) {
      const d = int(r, 2, 9),
        bags = int(r, 2, 15),
        c = int(r, 1, 12);
      const total = d * bags + c;
      const pairs: [number, number][] = [];
      for (let a = 2; a <= 15; a++) if (total % a === 0 && total / a >= 2 && total / a <= 15) pairs.push([a, total / a]);
      if (pairs.length === 0) continue;
      const [a, b] = pick(r, pairs);
      return {
        nums: [a, b, c, d],
        final: bags,
        question: `${p.name} has ${a} ${t.packs} with ${b} ${t.many} each. ${cap(p.they)} keeps ${c} ${t.many} and packs the rest into bags of ${d}. How many bags does ${p.name} fill?`,
        steps: [
          `${p.name} has ${a} * ${b} = ${total} ${t.many}.`,
          `Keeping ${c} leaves ${total} - ${c} = ${total - c} ${t.many}.`,
          `In bags of ${d} that makes ${total - c} / ${d} = ${bags} bags.`,
        ],
      };
    }
  },
  'groups-of-each': (r) => {
    const t = pick(r, THINGS),
      who = pick(r, FRIENDS);
    const b = int(r, 2, 6),
      groups = int(r, 2, 10),
      c = int(r, 12, 60),
      d = int(r, 10, 99),
      a = b * groups;
    return {
      nums: [a, b, c, d],
      final: groups * c + d,
      question: `A teacher splits ${a} ${who} into groups of ${b}. Each group gets ${c} ${t.many}, and the teacher keeps ${d} spare ${t.many}. How many ${t.many} does the teacher need in all?`,
      steps: [
        `${a} ${who} in groups of ${b} make ${a} / ${b} = ${groups} groups.`,
        `The groups get ${groups} * ${c} = ${groups * c} ${t.many}.`,
        `With the ${d} spare, the teacher needs ${groups * c} + ${d} = ${groups * c + d} ${t.many}.`,
      ],
    };
  },
  'pages-left': (r) => {
    const p = pick(r, PEOPLE);
    const b = int(r, 12, 60),
      c = int(r, 2, 9),
      a = b * c + int(r, 10, 400);
    return {
      nums: [a, b, c],
      final: a - b * c,
      question: `A book has ${a} pages. ${p.name} reads ${b} pages a day for ${c} days. How many pages are left to read?`,
      steps: [`In ${c} days ${p.name} reads ${b} * ${c} = ${b * c} pages.`, `That leaves ${a} - ${b * c} = ${a - b * c} pages.`],
    };
  },
};
export const TEMPLATE_NAMES = Object.keys(TEMPLATES);

/** Sentences that open an answer (so the prose is not the same every time). */
const OPENERS = ['', "Let's work it out step by step. ", 'We can solve this in steps. ', 'First, count carefully. '];

/** One problem drawn from `r`: a template, then its people, things and numbers. */
export function drawProblem(r: Rng): WordProblem {
  const template = pick(r, TEMPLATE_NAMES);
  const d = TEMPLATES[template](r);
  const opener = pick(r, OPENERS);
  const answer = `${opener}${d.steps.join(' ')}\nThe answer is ${d.final}.`;
  return { template, question: d.question, answer, final: d.final, key: `${template}:${d.nums.join(',')}` };
}

/** The number on the last "The answer is N" line of `text` (the grader: exact match of the final number), or undefined. */
export function finalNumber(text: string): number | undefined {
  const all = [...text.matchAll(/The answer is (-?\d+)/g)];
  return all.length ? Number(all[all.length - 1][1]) : undefined;
}

export const HELDOUT = { n: 2000, seed: 7 } as const;
export const VALIDATION = { n: 1000, seed: 8 } as const;

/** `n` problems of the seed-`seed` stream, each key once, skipping keys in `excluded`. */
export function drawDistinct(n: number, seed: number, excluded: ReadonlySet<string> = new Set()): WordProblem[] {
  const r = seededRandom(seed);
  const seen = new Set<string>();
  const out: WordProblem[] = [];
  for (let tries = 0; out.length < n; tries++) {
    if (tries > n * 50) throw new Error(`drawDistinct: only ${out.length} of ${n} distinct problems after ${tries} draws (seed ${seed})`);
    const p = drawProblem(r);
    if (seen.has(p.key) || excluded.has(p.key)) continue;
    seen.add(p.key);
    out.push(p);
  }
  return out;
}

export interface Splits {
  heldout: WordProblem[];
  validation: WordProblem[];
  /** Every key of both: training never draws one. */
  excluded: Set<string>;
}

/** The held-out split (reporting only) and the validation split (every choice), disjoint by key. */
export function evalSplits(): Splits {
  const heldout = drawDistinct(HELDOUT.n, HELDOUT.seed);
  const validation = drawDistinct(VALIDATION.n, VALIDATION.seed, new Set(heldout.map((p) => p.key)));
  return { heldout, validation, excluded: new Set([...heldout, ...validation].map((p) => p.key)) };
}

/** `n` training problems of the seed-`seed` stream (repeats allowed, as a data stream has them), none with a split's key. */
export function trainingProblems(n: number, seed: number, excluded: ReadonlySet<string>): WordProblem[] {
  const r = seededRandom(seed);
  const out: WordProblem[] = [];
  while (out.length < n) {
    const p = drawProblem(r);
    if (!excluded.has(p.key)) out.push(p);
  }
  return out;
}

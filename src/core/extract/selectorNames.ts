// Which class names, ids, attributes and tags are worth a selector (selector suggestion, suggest.ts, and the
// designer's item proposals): names that say what an element is, never those a build made up or that say how it
// looks. Pure.

const IDENT = /^-?[_a-zA-Z][_a-zA-Z0-9-]*$/;

/**
 * True for class names and ids that a build tool or a framework made up, or that number one element among
 * many: they change between deploys or between pages, so a selector built on them breaks.
 */
export function looksGenerated(token: string): boolean {
  // Names needing CSS escapes (Tailwind's `md:flex`, `w-1/2`) are skipped too: unreadable in a task file.
  if (!IDENT.test(token)) return true;
  if (/\d{3,}/.test(token)) return true; // counters and database ids: post-12345, ember402
  if (
    /^(css|sc|jsx|emotion|svelte|astro|styled|chakra|tw|e)-[a-zA-Z0-9]{4,}$/.test(token) &&
    /\d|[a-z][A-Z]|[A-Z][a-z]*[A-Z]/.test(token.split('-').slice(1).join(''))
  )
    return true;
  if (/__[a-zA-Z0-9-]{5}$/.test(token) && /[0-9]|[a-z][A-Z]/.test(token.slice(-5))) return true; // CSS modules: Button_root__a1B2c
  if (/^_[a-zA-Z0-9]{4,}$/.test(token) && /\d/.test(token)) return true; // _3xYz1
  if (
    token
      .split(/[-_]+/)
      .some((seg) => seg.length >= 5 && /\d/.test(seg) && /[a-zA-Z]/.test(seg) && !/^[a-zA-Z]+\d{1,2}$/.test(seg))
  )
    return true; // a1b2c, 9f3kq
  // Short mixed-case soup without separators (styled-components: bdfBwQ, AxjAm).
  if (token.length <= 8 && !/[-_]/.test(token) && (token.match(/[a-z][A-Z]|[A-Z]{2}[a-z]/g) ?? []).length >= 2)
    return true;
  // Short hashes without vowels (styled-components' second class: kgBfvc).
  if (
    token.length >= 5 &&
    token.length <= 8 &&
    /^[a-zA-Z]+$/.test(token) &&
    /[A-Z]/.test(token.slice(1)) &&
    (token.match(/[aeiouy]/gi) ?? []).length / token.length < 0.2
  )
    return true;
  if (/^(ng|_ng)[-_]/.test(token)) return true; // Angular bookkeeping (ng-star-inserted, _ngcontent-…)
  return false;
}

const STATE =
  /^(active|current|selected|open|opened|closed|hidden|visible|show|shown|hover|focus|focused|disabled|enabled|checked|expanded|collapsed|loading|loaded|odd|even|first|last|clearfix|clear|fade|in|out|is-.+|has-.+|js-.+|u-.+)$/;
const UTILITY =
  /^(row|col|col-.+|container(-fluid)?|d-.+|flex|flex-.+|grid|grid-.+|block|inline(-.+)?|relative|absolute|fixed|sticky|float-.+|pull-.+|text-.+|font-.+|bg-.+|border(-.+)?|rounded(-.+)?|shadow(-.+)?|[mp][trblxyse]?-.+|w-.+|h-.+|min-.+|max-.+|gap-.+|space-.+|items-.+|justify-.+|content-.+|self-.+|place-.+|order-.+|z-.+|top-.+|left-.+|right-.+|bottom-.+|inset-.+|overflow-.+|leading-.+|tracking-.+|opacity-.+|cursor-.+|transition(-.+)?|duration-.+|ease-.+|sr-only|visually-hidden|truncate|uppercase|lowercase|capitalize|italic|underline|invisible|list-.+|align-.+|whitespace-.+|break-.+|(col|row)-span-.+|(sm|md|lg|xl)-.+)$/;

/** Scale utilities of any framework: `scroll-m-20`, `gap-6`, `text-4xl`, `col-md-6`. */
const NUMERIC_UTILITY = /^[a-z]+(-[a-z]+)*-(\d+(\.\d+)?|\d?(xs|sm|md|lg|xl)|\d+xl)$/;

export type ClassKind = 'meaningful' | 'weak' | 'unusable';

/** Meaningful classes name what a thing is (`price_color`, `product_pod`); weak ones its state or its look. */
export function classKind(name: string): ClassKind {
  if (looksGenerated(name)) return 'unusable';
  if (STATE.test(name) || UTILITY.test(name) || NUMERIC_UTILITY.test(name)) return 'weak';
  return 'meaningful';
}

/** Attributes that name what an element is, stable across pages (microdata, test hooks, link relations…). */
export const STABLE_ATTRS = [
  'itemprop',
  'data-testid',
  'data-test',
  'data-qa',
  'data-cy',
  'name',
  'property',
  'rel',
  'role',
  'type',
  'aria-label',
];

/** Tags that say what an element is: a selector may name them. */
export const SEMANTIC_TAGS = new Set([
  'a',
  'abbr',
  'address',
  'article',
  'aside',
  'blockquote',
  'button',
  'caption',
  'cite',
  'code',
  'dd',
  'dl',
  'dt',
  'em',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'img',
  'input',
  'label',
  'li',
  'main',
  'meta',
  'nav',
  'ol',
  'p',
  'picture',
  'pre',
  'section',
  'select',
  'strong',
  'table',
  'tbody',
  'td',
  'textarea',
  'tfoot',
  'th',
  'thead',
  'time',
  'title',
  'tr',
  'ul',
  'video',
]);

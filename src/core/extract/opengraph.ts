import { isTag, type AnyNode } from 'domhandler';

// OpenGraph as a field source (`opengraph: og:title`): the `<meta property="og:…" content="…">` tags pages carry
// for link previews, with their namespaces (`product:price:amount`, `article:published_time`) and Twitter's cards
// (`<meta name="twitter:title">`, which use `name`). A key is read as written, case-insensitively; a repeated key
// (`og:image`) is a list. Only `<meta>` in the page is read (the head as parsed, wherever a template put it). Pure.

/** The page's `property`/`name` → `content` pairs of its `<meta>` tags whose key has a prefix (`og:`, `product:`…), in order. */
export function openGraphTags(root: AnyNode): [string, string][] {
  const out: [string, string][] = [];
  let budget = 200_000;
  // Iterative: a page nested thousands of levels deep must not overflow the stack.
  const stack: AnyNode[] = [root];
  while (stack.length > 0 && --budget >= 0) {
    const node = stack.pop()!;
    if (isTag(node) && node.name.toLowerCase() === 'meta') {
      const key = node.attribs.property ?? node.attribs.name;
      const content = node.attribs.content;
      if (key && content !== undefined && KEY.test(key) && out.length < 10_000) out.push([key.toLowerCase(), content]);
      continue;
    }
    if (isTag(node) && (node.name.toLowerCase() === 'script' || node.name.toLowerCase() === 'style')) continue;
    if ('children' in node)
      for (let i = node.children.length - 1; i >= 0; i--) if (isTag(node.children[i]!)) stack.push(node.children[i]!);
  }
  return out;
}

const KEY = /^[A-Za-z][A-Za-z0-9_-]*(:[A-Za-z0-9_-]+)+$/;

/** The key as read (lower case), or why it is not one (said at the field, with an example). */
export function parseOpenGraphKey(text: string): string | { error: string } {
  if (KEY.test(text)) return text.toLowerCase();
  if (/^[A-Za-z][A-Za-z0-9_-]*$/.test(text))
    return {
      error: `'${text}' has no prefix: write the meta property as the page does, e.g. og:${text} (or product:price:amount, twitter:${text})`,
    };
  return {
    error: `'${text}' is not an OpenGraph property: write a <meta property> as the page does, e.g. og:title or product:price:amount`,
  };
}

/** The values of `key`, in page order (first only unless `all`). */
export function openGraphValues(tags: readonly (readonly [string, string])[], key: string, all: boolean): string[] {
  const out: string[] = [];
  for (const [k, v] of tags) {
    if (k !== key) continue;
    out.push(v);
    if (!all) break;
  }
  return out;
}

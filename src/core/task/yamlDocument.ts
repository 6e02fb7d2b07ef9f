import {
  Composer,
  Parser,
  YAMLParseError,
  type CST,
  type Document,
  type DocumentOptions,
  type LineCounter,
  type ParseOptions,
  type SchemaOptions,
} from 'yaml';

/** Deeper than any task file needs (the schema's deepest field is about 8 levels), far below the stack's limit. */
export const MAX_YAML_DEPTH = 64;

export type BoundedParse =
  | { readonly ok: true; readonly doc: Document.Parsed }
  | { readonly ok: false; readonly offset: number; readonly depth: number };

/**
 * `yaml.parseDocument`, but a document nested deeper than `maxDepth` collections is refused before it is composed.
 * The lexer and the CST parser are iterative; the composer and `toJS` recurse. On a file of 20,000 `[` they would
 * overflow the stack, and the library turns that into an error at whichever offset the stack ran out: a message
 * that says nothing useful, at a position that moves from one run to the next.
 */
export function parseYamlBounded(
  text: string,
  options: ParseOptions & DocumentOptions & SchemaOptions & { lineCounter: LineCounter },
  maxDepth = MAX_YAML_DEPTH,
): BoundedParse {
  const tokens = [...new Parser(options.lineCounter.addNewLine).parse(text)];
  const tooDeep = firstTooDeep(tokens, maxDepth);
  if (tooDeep) return { ok: false, ...tooDeep };
  const composer = new Composer(options);
  let doc: Document.Parsed | null = null;
  for (const d of composer.compose(tokens, true, text.length)) {
    if (!doc) doc = d;
    else {
      // Same rule as parseDocument: one document per file.
      doc.errors.push(
        new YAMLParseError(
          [d.range[0], d.range[1]],
          'MULTIPLE_DOCS',
          'Source contains multiple documents; please use YAML.parseAllDocuments()',
        ),
      );
      break;
    }
  }
  return { ok: true, doc: doc! };
}

type Collection = CST.BlockMap | CST.BlockSequence | CST.FlowCollection;

function isCollection(t: CST.Token | undefined): t is Collection {
  return !!t && (t.type === 'block-map' || t.type === 'block-seq' || t.type === 'flow-collection');
}

/** The first collection nested deeper than `maxDepth`, found without recursion. */
function firstTooDeep(tokens: readonly CST.Token[], maxDepth: number): { offset: number; depth: number } | null {
  const stack: [Collection, number][] = [];
  for (const t of tokens) {
    if (t.type === 'document' && isCollection(t.value)) stack.push([t.value, 1]);
    while (stack.length > 0) {
      const [c, depth] = stack.pop()!;
      if (depth > maxDepth) return { offset: c.offset, depth };
      for (const item of c.items) {
        const key = 'key' in item ? item.key : undefined;
        if (isCollection(key ?? undefined)) stack.push([key as Collection, depth + 1]);
        if (isCollection(item.value)) stack.push([item.value, depth + 1]);
      }
    }
  }
  return null;
}

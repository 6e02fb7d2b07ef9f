import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

// The import graph of a source tree, read with TypeScript's own parser (the compiler the project builds with, so
// every syntax the code uses is understood), and the house rules checked on it. docs/architecture.md says what
// the rooms are; this is what keeps the tree that way. Kept free of the project's own sources so the rules can
// be tried on a small tree with deliberate violations.

export interface ImportEdge {
  /** Importing file, relative to the root, with forward slashes. */
  readonly from: string;
  readonly line: number;
  /** The specifier as written. */
  readonly spec: string;
  /** The imported file relative to the root, for relative specifiers that resolve inside it. */
  readonly to: string | null;
  /** `import type`, `export type`, or every named binding marked `type`: erased by the compiler. */
  readonly typeOnly: boolean;
  /** The names imported, when the import lists them (`import { a, b }`). */
  readonly names: readonly string[] | null;
}

const posix = (p: string) => p.split(sep).join('/');

export function sourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(posix(relative(root, p)));
    }
  };
  walk(root);
  return out.sort();
}

function resolveRelative(root: string, from: string, spec: string): string | null {
  const base = resolve(root, dirname(from), spec);
  for (const c of [base + '.ts', base + '.tsx', join(base, 'index.ts')]) {
    if (existsSync(c) && statSync(c).isFile()) return posix(relative(root, c));
  }
  return null;
}

/** Every static import and re-export, and every `import('literal')` and `require('literal')`, of every file. */
export function importEdges(root: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of sourceFiles(root)) {
    const sf = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const add = (node: ts.Node, spec: string, typeOnly: boolean, names: string[] | null) =>
      edges.push({
        from: file,
        line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1,
        spec,
        to: spec.startsWith('.') ? resolveRelative(root, file, spec) : null,
        typeOnly,
        names,
      });
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const clause = node.importClause;
        const named =
          clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : null;
        const typeOnly =
          !!clause &&
          (clause.isTypeOnly || (!clause.name && !!named && named.length > 0 && named.every((e) => e.isTypeOnly)));
        const names = named && !clause?.name ? named.map((e) => (e.propertyName ?? e.name).text) : null;
        add(node, node.moduleSpecifier.text, typeOnly, names);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        add(node, node.moduleSpecifier.text, node.isTypeOnly, null);
      } else if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)
      ) {
        add(node, node.argument.literal.text, true, null);
      } else if (
        ts.isCallExpression(node) &&
        (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
          (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
        node.arguments.length === 1 &&
        ts.isStringLiteral(node.arguments[0]!)
      ) {
        add(node, node.arguments[0].text, false, null);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return edges;
}

/**
 * Import cycles among the files, each as the list of files around it (first file repeated at the end). Type-only
 * imports count: a cycle through types still means neither module can be read, moved or tested without the other.
 */
export function importCycles(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) if (e.to) (next.get(e.from) ?? next.set(e.from, new Set()).get(e.from)!).add(e.to);
  // Tarjan's strongly connected components; one cycle reported per component, found by a walk inside it.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strong = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1 || next.get(v)?.has(v)) components.push(c);
    }
  };
  for (const v of [...next.keys()].sort()) if (!idx.has(v)) strong(v);
  return components.map((c) => {
    const inside = new Set(c);
    const start = [...c].sort()[0]!;
    const path = [start];
    const seen = new Set([start]);
    // Walk inside the component back to the start: breadth-first, so the cycle shown is a shortest one.
    const prev = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift()!;
      for (const w of next.get(v) ?? []) {
        if (!inside.has(w)) continue;
        if (w === start) {
          const back: string[] = [];
          for (let x: string | undefined = v; x && x !== start; x = prev.get(x)) back.unshift(x);
          return [...path, ...back, start];
        }
        if (!seen.has(w)) {
          seen.add(w);
          prev.set(w, v);
          queue.push(w);
        }
      }
    }
    return [...c, c[0]!];
  });
}

/** The room of a file: its first folder under the root (`core`, `frontier`, `extension`, ...). */
export const roomOf = (file: string): string => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '');

/** Every read of `process.env` (`process.env.X`, `process.env[x]`, `process.env` passed on) in a tree's files. */
export function envReads(root: string): { readonly file: string; readonly line: number }[] {
  const out: { file: string; line: number }[] = [];
  for (const file of sourceFiles(root)) {
    const sf = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      const isProcess = (e: ts.Expression) => ts.isIdentifier(e) && e.text === 'process';
      const env =
        (ts.isPropertyAccessExpression(node) && isProcess(node.expression) && node.name.text === 'env') ||
        (ts.isElementAccessExpression(node) &&
          isProcess(node.expression) &&
          ts.isStringLiteral(node.argumentExpression) &&
          node.argumentExpression.text === 'env');
      if (env) out.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1 });
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

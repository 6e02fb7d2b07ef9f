// Validation of messages from a webview: they are untrusted input. No VS Code import, so unit tests cover it.

export type Check<T> = (v: unknown) => v is T;

export const isStr =
  (max = 1000): Check<string> =>
  (v): v is string =>
    typeof v === 'string' && v.length <= max;
export const isInt =
  (min: number, max: number): Check<number> =>
  (v): v is number =>
    Number.isInteger(v) && (v as number) >= min && (v as number) <= max;
export const isBool: Check<boolean> = (v): v is boolean => typeof v === 'boolean';
export const isOneOf =
  <T extends string>(...values: readonly T[]): Check<T> =>
  (v): v is T =>
    typeof v === 'string' && (values as readonly string[]).includes(v);

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Checks an object's fields; extra fields are refused too, so nothing unexpected reaches a handler. */
export function hasShape(
  v: unknown,
  shape: Readonly<Record<string, Check<unknown>>>,
  optional: readonly string[] = [],
): v is Record<string, unknown> {
  if (!isRecord(v)) return false;
  for (const k of Object.keys(v)) if (!(k in shape)) return false;
  for (const [k, check] of Object.entries(shape)) {
    if (!(k in v)) {
      if (optional.includes(k)) continue;
      return false;
    }
    if (!check(v[k])) return false;
  }
  return true;
}

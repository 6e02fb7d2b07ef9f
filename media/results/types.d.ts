// The webview API VS Code injects, and text imports of CSS (esbuild's text loader).
interface VsCodeApi<S> {
  postMessage(message: unknown): void;
  getState(): S | undefined;
  setState(state: S): void;
}
declare function acquireVsCodeApi<S = unknown>(): VsCodeApi<S>;
declare module '*.css' {
  const text: string;
  export default text;
}

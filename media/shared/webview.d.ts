// What every webview bundle may assume: the API VS Code injects into a webview (the monitor's page, served by
// `crawl-studio monitor`, has none) and text imports of CSS (esbuild's `.css: text` loader for webview scripts).
interface VsCodeApi<S = unknown> {
  postMessage(message: unknown): void;
  getState(): S | undefined;
  setState(state: S): void;
}
declare function acquireVsCodeApi<S = unknown>(): VsCodeApi<S>;
declare module '*.css' {
  const text: string;
  export default text;
}

// The webview bundle imports its stylesheet as text (esbuild's `.css: text` loader for webview scripts).
declare module '*.css' {
  const text: string;
  export default text;
}

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

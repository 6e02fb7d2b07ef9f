// Lua scripts are bundled as text by esbuild (see esbuild.mjs, loader ".lua": "text").
declare module '*.lua' {
  const source: string;
  export default source;
}

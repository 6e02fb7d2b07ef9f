// Lua scripts are bundled as text by esbuild (see esbuild.mjs, loader ".lua": "text").
declare module '*.lua' {
  const source: string;
  export default source;
}

// The demo task file is bundled into the CLI as text (loader ".yaml": "text").
declare module '*.yaml' {
  const source: string;
  export default source;
}

// Lua scripts are bundled as text by esbuild (see esbuild.mjs, loader ".lua": "text").
declare module '*.lua' {
  const source: string;
  export default source;
}

// The task-file schema validator, compiled from crawl-task.schema.json at build time by ajv's standalone code
// generation (see scripts/esbuild-task-validator.mjs): no ajv.compile at run time.
declare module 'virtual:task-schema-validator' {
  const validate: import('ajv').ValidateFunction;
  export default validate;
}

// The demo task file is bundled into the CLI as text (loader ".yaml": "text").
declare module '*.yaml' {
  const source: string;
  export default source;
}

// The Redis Cluster hash slot of a key (CRC16 of its hash tag, mod 16384), as ioredis computes it: the package ioredis
// itself uses, which ships no types.
declare module 'cluster-key-slot' {
  const calculateSlot: (key: string) => number;
  export default calculateSlot;
}

// undici's own modules, which dispatcher.ts imports rather than its entry (see there): they ship no types of their
// own, and each is the class or function the entry exports under the same name.

declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';
  const AgentClass: typeof Agent;
  export = AgentClass;
}

declare module 'undici/lib/dispatcher/proxy-agent.js' {
  import type { ProxyAgent } from 'undici';
  const ProxyAgentClass: typeof ProxyAgent;
  export = ProxyAgentClass;
}

declare module 'undici/lib/dispatcher/socks5-proxy-agent.js' {
  import type { Dispatcher } from 'undici';
  const Socks5ProxyAgent: new (url: string) => Dispatcher;
  export = Socks5ProxyAgent;
}

declare module 'undici/lib/dispatcher/dispatcher.js' {
  const DispatcherClass: { prototype: Record<string, unknown> };
  export = DispatcherClass;
}

declare module 'undici/lib/api/api-connect.js' {
  const connect: unknown;
  export = connect;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  const request: (this: Dispatcher, opts: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
  export = request;
}

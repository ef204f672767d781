// Types of the parts of the `sip` package (0.0.6, plain JavaScript) the platform uses: its parser and serializer, its
// RFC 3261 transaction layer and its digest helper. Messages are plain objects; header names are lower case.
declare module 'sip' {
  namespace sip {
    interface SipUri {
      schema: string;
      user?: string;
      password?: string;
      host: string;
      port?: number;
      params: Record<string, string | null>;
      headers: Record<string, string>;
    }
    interface NameAddr { name?: string; uri: string | SipUri; params: Record<string, string | null> }
    interface Via { version?: string; protocol: string; host: string; port?: number; params: Record<string, string | null> }
    interface CSeq { seq: number; method: string }
    interface Headers {
      via?: Via[];
      to?: NameAddr;
      from?: NameAddr;
      'call-id'?: string;
      cseq?: CSeq;
      contact?: NameAddr[] | '*';
      route?: NameAddr[];
      'record-route'?: NameAddr[];
      'content-length'?: number;
      'content-type'?: string;
      'www-authenticate'?: Record<string, string>[];
      'proxy-authenticate'?: Record<string, string>[];
      authorization?: Record<string, string>[];
      'proxy-authorization'?: Record<string, string>[];
      [name: string]: unknown;
    }
    interface Message {
      method?: string;
      uri?: string | SipUri;
      status?: number;
      reason?: string;
      version?: string;
      headers: Headers;
      content?: string;
    }
    /** What the transaction layer sends through and releases when a transaction ends. */
    interface Connection { protocol: string; send(m: Message): void; release(): void }
    interface ClientTransaction { message(m: Message, remote?: unknown): void; shutdown(): void }
    interface ServerTransaction { send(m: Message): void; message(m: Message, remote?: unknown): void; shutdown(): void }
    interface TransactionLayer {
      createServerTransaction(rq: Message, cn: Connection): ServerTransaction;
      createClientTransaction(cn: Connection, rq: Message, callback: (rs: Message) => void): ClientTransaction;
      getServer(m: Message): ServerTransaction | undefined;
      getClient(m: Message): ClientTransaction | undefined;
      destroy(): void;
    }
    /** Parses one whole message (a datagram); undefined when it is not SIP. */
    function parse(data: Buffer | string): Message | undefined;
    /** Serializes a message; sets its Content-Length from content. */
    function stringify(m: Message): string;
    function parseUri(s: string | SipUri): SipUri | undefined;
    function stringifyUri(uri: string | SipUri): string;
    function makeResponse(rq: Message, status: number, reason?: string, extension?: { headers?: Headers; content?: string }): Message;
    function makeTransactionLayer(options: Record<string, unknown>, transport: unknown): TransactionLayer;
    /** Frames a byte stream (TCP) into messages; onFlood when the headers or body exceed the limits. */
    function makeStreamParser(onMessage: (m: Message) => void, onFlood: () => void, maxBytesHeaders: number, maxContentLength: number): (data: string) => void;
    function generateBranch(): string;
    /** Stops the package's one UA stack (the one sip/proxy starts). */
    function stop(): void;
  }
  export = sip;
}

declare module 'sip/digest' {
  import type sip from 'sip';
  namespace digest {
    interface Credentials { user: string; password: string; realm?: string }
    /** Adds Authorization (401) or Proxy-Authorization (407) answering the challenge in `rs` to `rq`. */
    function signRequest(ctx: Record<string, unknown> | null, rq: sip.Message, rs: sip.Message, creds: Credentials): unknown;
  }
  export = digest;
}

declare module 'sip/proxy' {
  import type sip from 'sip';
  namespace proxy {
    /** Starts the package's one UA stack as a stateful proxy: every request but CANCEL goes to `route`. */
    function start(options: Record<string, unknown>, route: (rq: sip.Message, remote: unknown) => void): void;
    /** Forwards a request within its proxy context (responses come back the same way), or sends a response. */
    function send(m: sip.Message, callback?: (rs: sip.Message) => void): void;
    function stop(): void;
  }
  export = proxy;
}

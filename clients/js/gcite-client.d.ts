// Types of @gcite/client (gcite-client.js): the G-Cite stream protocol, docs/protocol.md.

/** The protocol's events, in the order a stream sends them. */
export declare const EVENTS: readonly ["ready", "sources", "text", "cite", "replace", "done", "error"];

/** The error codes the client makes itself. */
export declare const CLIENT_ERRORS: Readonly<{ connection: "connection"; incomplete: "incomplete"; badStream: "bad_stream" }>;

/** One numbered source the answer may cite (every field a string; `url` is http(s) or ""). */
export interface Source {
  id: string;
  source_type: "rag" | "web";
  document_title: string;
  display_subtitle: string;
  site_name: string;
  published_date: string;
  url: string;
  snippet: string;
}

/** Why a weak citation is weak: `missing` has `items`; the others `claim` and `source`. */
export interface WeakReason {
  kind: "missing" | "negation" | "antonym" | "number" | "roles" | "scope" | (string & {});
  items?: string[];
  claim?: string;
  source?: string;
  [key: string]: unknown;
}

/** A cited source in `done`: its display number, how often it was cited, and the support check's flags when the
 *  validator provides them. */
export interface Citation extends Source {
  number: number;
  count: number;
  support?: number;
  weak?: boolean;
  reasons?: WeakReason[];
  reason?: string;
}

export type Status = "cited" | "uncited" | "insufficient_evidence";

export interface DoneData {
  status: Status;
  citations: Citation[];
  invalid_ids: string[];
  /** the handle to send with the next question of this conversation */
  conversation: string;
  message_id: string;
  uncited_sentences?: unknown[];
  citation_recall_proxy?: number;
  citation_precision_proxy?: number;
  [key: string]: unknown;
}

export interface ErrorData {
  /** the endpoint's code (`app_error`, `invalid_token`, …), `http_<status>`, or one of CLIENT_ERRORS */
  code: string;
  /** safe to show (the endpoint's are in English and Chinese; the client's own in English) */
  message: string;
  /** the HTTP status, when the endpoint refused the request (401: sign in again; 403: origin or conversation) */
  status?: number;
}

export type GCiteEvent =
  | { event: "ready"; data: Record<string, never> }
  | { event: "sources"; data: { sources: Source[] } }
  | { event: "text"; data: { text: string } }
  | { event: "cite"; data: { numbers: number[]; ids: string[]; new: number[] } }
  | { event: "replace"; data: { text: string } }
  | { event: "done"; data: DoneData }
  | { event: "error"; data: ErrorData };

/** A body to read: a fetch Response, a ReadableStream, or an async iterable of bytes or text (a Node stream). */
export type Body =
  | Response
  | ReadableStream<Uint8Array | string>
  | AsyncIterable<Uint8Array | string>
  | Iterable<Uint8Array | string>;

/** The protocol events of a body, ending with exactly one `done` or `error`. */
export declare function readEvents(body: Body): AsyncGenerator<GCiteEvent, void, undefined>;

/** `url` when it is an absolute http(s) URL, else "". */
export declare function safeUrl(url: unknown): string;

export type Result =
  | (Omit<DoneData, "status" | "citations" | "invalid_ids" | "conversation" | "message_id"> & {
      status: Status;
      /** the answer's text, each citation written `[n]` */
      answer: string;
      citations: Citation[];
      invalid_ids: string[];
      conversation: string;
      message_id: string;
    })
  | { status: "error"; error: { code: string; message: string } };

/** Folds events into one result (the Python client's `collect`). */
export declare function collect(
  events: AsyncIterable<GCiteEvent> | Iterable<GCiteEvent>,
  onEvent?: (event: GCiteEvent) => void,
): Promise<Result>;

export type TokenSource = string | null | (() => string | null | Promise<string | null>);

export interface ChatOptions {
  /** `https://<dify>/e/<hook>/gcite/chat`, or `gcite serve`'s */
  url: string | URL;
  /** the user's JWT, or a function returning it (called for every question) */
  token?: TokenSource;
  /** a handle from an earlier `done`, to continue that conversation */
  conversation?: string | null;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
}

export interface AskOptions {
  signal?: AbortSignal;
}

export declare class Chat {
  constructor(options: ChatOptions);
  url: string;
  token: TokenSource;
  /** the handle from the last `done`; the next question continues this conversation */
  conversation: string | null;
  headers: Record<string, string>;
  /** forgets the conversation */
  reset(): void;
  /** the question's events as they come, ending with one `done` or `error`; throws on abort */
  stream(query: string, options?: AskOptions): AsyncGenerator<GCiteEvent, void, undefined>;
  /** the question's whole result */
  ask(query: string, options?: AskOptions & { onEvent?: (event: GCiteEvent) => void }): Promise<Result>;
}

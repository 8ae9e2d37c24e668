// @gcite/client: read a cited answer from G-Cite's chat endpoint, in browsers and in Node 20+.
//
// One ES module with no dependencies and no build step: import it as it is (from npm, or beside the reference page,
// which the plugin serves as `gcite-client.js`). It reads the G-Cite stream protocol (docs/protocol.md): the events
// ready, sources, text, cite, replace, done and error. It touches no DOM and no browser-only global, at import time
// or after; it needs only what browsers and Node 20 both have: fetch, URL, TextDecoder, async iteration.
//
//   const chat = new Chat({ url: "https://<dify>/e/<hook>/gcite/chat", token });
//   for await (const { event, data } of chat.stream("How do I book a meeting room?")) { … }   // as it comes
//   const result = await chat.ask("And a visitor?");   // the next turn of the same conversation, all at once
//
// It never turns text into markup: what it yields is data. Show text as text (textContent, createTextNode) and
// check a link with safeUrl before making it one.

/** The protocol's events, in the order a stream sends them; any other event name is skipped. */
export const EVENTS = Object.freeze(["ready", "sources", "text", "cite", "replace", "done", "error"]);

/** The error codes this client makes itself (the endpoint's own codes come in `error` events and HTTP answers). */
export const CLIENT_ERRORS = Object.freeze({
  connection: "connection",  // the request could not be sent, or no answer came
  incomplete: "incomplete",  // the body ended (or the connection broke) before `done` or `error`
  badStream: "bad_stream",   // an event whose data is not a JSON object
});
const INCOMPLETE_MESSAGE = "the connection closed before the answer was complete";

function isAbort(error) {
  return error?.name === "AbortError" || error?.name === "TimeoutError";
}

/** Reads what is left of a body after its last event (nothing, from a server that keeps to the protocol), so that the
 *  request ends as a finished one, not a cancelled one; a server that sends on and on is cut off. */
async function drain(reader) {
  try {
    for (let bytes = 0; bytes < 65536;) {
      const { value, done } = await reader.read();
      if (done) return;
      bytes += value?.length ?? 0;
    }
    await reader.cancel();
  } catch {
    // the connection went away: nothing to finish
  }
}

/** The body's text pieces: from a fetch Response, a ReadableStream, or any async iterable (a Node stream, say) of
 *  bytes or strings. Bytes are read as UTF-8. `state.ended`: the last event was read (see readEvents). */
async function* textPieces(body, state) {
  const source = body && typeof body === "object" && "body" in body && typeof body.arrayBuffer === "function"
    ? body.body : body;  // a Response: its body stream (null for an empty body)
  if (source == null) return;
  const decoder = new TextDecoder("utf-8");
  const decode = (piece) => (typeof piece === "string" ? piece : decoder.decode(piece, { stream: true }));
  if (typeof source.getReader === "function") {
    const reader = source.getReader();
    let finished = false;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        yield decode(value);
      }
      finished = true;
    } finally {
      if (finished) reader.releaseLock();
      else if (state.ended) drain(reader);  // in the background: the caller has its answer
      else await reader.cancel().catch(() => {});  // the caller stopped before the answer's end: close the connection
    }
  } else if (typeof source[Symbol.asyncIterator] === "function" || typeof source[Symbol.iterator] === "function") {
    for await (const piece of source) yield decode(piece);
  } else {
    throw new TypeError("readEvents: expected a fetch Response, a ReadableStream or an async iterable of bytes");
  }
  const rest = decoder.decode();
  if (rest) yield rest;
}

/** The SSE blocks of a text stream, as {name, data} (data lines joined by "\n"); comments and nameless blocks are
 *  kept out by the caller. Lines end at CRLF, LF or CR, also when a CRLF is split between two pieces. */
async function* sseBlocks(pieces) {
  const LINE_END = /\r\n|\r|\n/g;
  let buffer = "", name = null, data = [];
  function* blocks(last) {  // the blocks the buffer's whole lines end; `last`: no more text comes
    let start = 0;
    for (;;) {
      LINE_END.lastIndex = start;
      const end = LINE_END.exec(buffer);
      if (!end || (!last && end[0] === "\r" && end.index + 1 === buffer.length)) break;  // a CR last: an LF may follow
      const line = buffer.slice(start, end.index);
      start = end.index + end[0].length;
      if (line === "") {
        if (data.length) yield { name, data: data.join("\n") };
        name = null;
        data = [];
      } else if (!line.startsWith(":")) {  // a comment (": open") is skipped
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") name = value.trim();
        else if (field === "data") data.push(value);
      }
    }
    buffer = buffer.slice(start);
  }
  for await (const piece of pieces) {
    buffer += piece;
    yield* blocks(false);
  }
  yield* blocks(true);
  // a last block without its blank line is not an event: the connection was cut inside it
}

/**
 * Yields `{event, data}` for each protocol event of a response body, in order, and ends after `done` or `error`:
 * every stream it reads ends with exactly one of them. A body that ends before (a cut connection) ends with
 * `{event: "error", data: {code: "incomplete", message}}`; an event whose data is not a JSON object with
 * `{code: "bad_stream"}`. Comments, `ping` and event names it does not know are skipped. `data` is the JSON object
 * the server sent, not checked further (the endpoint's are as docs/protocol.md says).
 * An abort (AbortSignal) is thrown, not turned into an event.
 */
export async function* readEvents(body) {
  const state = { ended: false };
  try {
    for await (const { name, data } of sseBlocks(textPieces(body, state))) {
      if (name === null || !EVENTS.includes(name)) continue;
      let parsed;
      try {
        parsed = JSON.parse(data);
      } catch {
        parsed = undefined;
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
        yield { event: "error", data: { code: CLIENT_ERRORS.badStream, message: `the server sent an unreadable ${name} event` } };
        return;
      }
      state.ended = name === "done" || name === "error";
      yield { event: name, data: parsed };
      if (state.ended) return;
    }
  } catch (error) {
    if (isAbort(error)) throw error;
    // a broken connection mid-body: the answer is incomplete, as when the body just ends
  }
  yield { event: "error", data: { code: CLIENT_ERRORS.incomplete, message: INCOMPLETE_MESSAGE } };
}

/** `url` when it is an absolute http(s) URL with a host and no space or control character, else "" (the endpoint
 *  already sends only such URLs or ""; a front end checks again before making a link). */
export function safeUrl(url) {
  if (typeof url !== "string") return "";
  const text = url.trim();
  if (!text || /[\u0000-\u0020\u007f]/.test(text)) return "";
  try {
    const parsed = new URL(text);
    return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.host ? text : "";
  } catch {
    return "";
  }
}

/**
 * Folds events (any iterable or async iterable of `{event, data}`) into one result, as gcite.client.collect does
 * in Python: `{status, answer, citations, invalid_ids, conversation, message_id, …}` with each citation written
 * `[n]` in `answer` and done's other fields (the support check's) kept; on an error, `{status: "error", error:
 * {code, message}}` and no partial answer. `onEvent` sees each event first.
 */
export async function collect(events, onEvent) {
  let text = [];
  for await (const item of events) {
    onEvent?.(item);
    const data = item.data && typeof item.data === "object" ? item.data : {};
    switch (item.event) {
      case "text": text.push(String(data.text ?? "")); break;
      case "cite": text.push((Array.isArray(data.numbers) ? data.numbers : []).map((n) => `[${n}]`).join("")); break;
      case "replace": text = [String(data.text ?? "")]; break;
      case "error":
        return { status: "error", error: { code: String(data.code || "error"), message: String(data.message || "") } };
      case "done": {
        const { status, citations, invalid_ids: invalidIds, conversation, message_id: messageId, ...extra } = data;
        return { ...extra, status: String(status ?? ""), answer: text.join(""), citations: Array.isArray(citations) ? citations : [],
                 invalid_ids: Array.isArray(invalidIds) ? invalidIds : [], conversation: String(conversation || ""),
                 message_id: String(messageId || "") };
      }
      default: break;
    }
  }
  return { status: "error", error: { code: CLIENT_ERRORS.incomplete, message: INCOMPLETE_MESSAGE } };
}

/**
 * A chat with the endpoint: one POST per question, the conversation continued with the handle of the last `done`.
 *
 * `url`: the endpoint, `https://<dify>/e/<hook>/gcite/chat` (or `gcite serve`'s). `token`: the user's JWT from your
 * login service, or a function returning it (called for every question, so it can refresh it). `fetch`: another
 * fetch (a test's, a proxy's); `headers`: more request headers.
 */
export class Chat {
  constructor({ url, token = null, conversation = null, fetch: fetcher, headers = {} } = {}) {
    if (!url) throw new TypeError("Chat: `url` is required (https://<dify>/e/<hook>/gcite/chat)");
    this.url = String(url);
    this.token = token;
    this.conversation = conversation;  // the handle from the last `done`: the next question continues it
    this.headers = headers;
    this.fetch = fetcher ?? ((...args) => globalThis.fetch(...args));
  }

  /** Forgets the conversation: the next question starts a new one. */
  reset() {
    this.conversation = null;
  }

  /**
   * Asks `query` and yields its events as they come (see readEvents), ending with one `done` or `error`. A request
   * the endpoint refuses is one `error` event with its code and message and the HTTP `status` (401: sign in again);
   * one that cannot be sent is `{code: "connection"}`. `signal` (an AbortSignal) stops it: then it throws.
   */
  async* stream(query, { signal } = {}) {
    if (typeof query !== "string" || !query.trim()) throw new TypeError("Chat.stream: `query` must be non-empty text");
    const token = typeof this.token === "function" ? await this.token() : this.token;
    const body = { query };
    if (this.conversation) body.conversation = this.conversation;
    const headers = { ...this.headers, "Content-Type": "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    let response;
    try {
      const fetcher = this.fetch;  // called as a function: a browser's fetch refuses another `this`
      response = await fetcher(this.url, { method: "POST", headers, body: JSON.stringify(body), signal });
    } catch (error) {
      if (isAbort(error) || signal?.aborted) throw error;
      yield { event: "error", data: { code: CLIENT_ERRORS.connection, message: `cannot reach ${this.url}: ${error?.name || "error"}` } };
      return;
    }
    if (!response.ok) {
      let answer = {};
      try {
        answer = await response.json();
      } catch {
        // not JSON: the status says enough
      }
      answer = answer && typeof answer === "object" ? answer : {};
      yield { event: "error", data: { code: String(answer.code || `http_${response.status}`),
                                      message: String(answer.message || `the server answered ${response.status}`),
                                      status: response.status } };
      return;
    }
    for await (const item of readEvents(response)) {
      if (item.event === "done" && typeof item.data.conversation === "string" && item.data.conversation) {
        this.conversation = item.data.conversation;
      }
      yield item;
    }
  }

  /** Asks `query` and resolves to the whole result (see collect); `onEvent` sees each event as it comes. */
  ask(query, { signal, onEvent } = {}) {
    return collect(this.stream(query, { signal }), onEvent);
  }
}

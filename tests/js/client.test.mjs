// @gcite/client (clients/js/gcite-client.js) in Node, with `node --test tests/js/`.
//
// The first part needs nothing else: the SSE reading, collect, safeUrl and Chat with a fetch the test writes. The
// second runs against a real `gcite serve`, given by tests/js/test_js_client.py (which starts it) in the
// environment: GCITE_CHAT_URL (the endpoint), GCITE_USERS_URL (/local/users), GCITE_SECRET_FILE (its --secret-file)
// and GCITE_APP_ORIGIN (its --allow-origin). Without them those tests are skipped.

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { Readable } from "node:stream";
import { describe, it } from "node:test";

const MODULE = new URL("../../clients/js/gcite-client.js", import.meta.url);
const client = await import(MODULE.href);
const { Chat, CLIENT_ERRORS, EVENTS, collect, readEvents, safeUrl } = client;

const sse = (...events) => events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join("");
const SOURCE = { id: "4", source_type: "web", document_title: "标题", display_subtitle: "example.com", site_name: "",
                 published_date: "", url: "https://example.com/a", snippet: "片段" };
const DONE = ["done", { status: "cited", citations: [{ number: 1, id: "4", count: 1, ...SOURCE }], invalid_ids: [],
                        conversation: "c1.mac", message_id: "m" }];
const STREAM = ": open\n\n" + sse(["ready", {}], ["sources", { sources: [SOURCE] }], ["text", { text: "答案“引号”" }],
                                  ["cite", { numbers: [1], ids: ["4"], new: [1] }], ["text", { text: "。" }], DONE);

async function events(body) {
  const out = [];
  for await (const item of readEvents(body)) out.push(item);
  return out;
}

function pieces(text, size) {  // the UTF-8 bytes of `text` in pieces of `size` bytes (splitting characters too)
  const bytes = new TextEncoder().encode(text);
  const out = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size));
  return out;
}

const names = (list) => list.map((e) => e.event);

describe("the module", () => {
  it("imports in Node and names no browser-only global", () => {
    assert.equal(typeof globalThis.document, "undefined");
    assert.equal(typeof globalThis.window, "undefined");
    const source = readFileSync(MODULE, "utf-8").replace(/\/\/.*$/gm, "").replace(/\/\*[^]*?\*\//g, "");
    for (const name of ["document", "window", "navigator", "localStorage", "location", "XMLHttpRequest"]) {
      assert.doesNotMatch(source, new RegExp(`\\b${name}\\b`), name);
    }
    assert.deepEqual([...EVENTS], ["ready", "sources", "text", "cite", "replace", "done", "error"]);
  });

  it("declares in its .d.ts exactly what it exports", () => {
    const types = readFileSync(new URL("../../clients/js/gcite-client.d.ts", import.meta.url), "utf-8");
    const declared = [...types.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]);
    assert.deepEqual(declared.sort(), Object.keys(client).sort());
  });

  it("is the package's entry point and has the plugin's version", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../clients/js/package.json", import.meta.url), "utf-8"));
    const manifest = readFileSync(new URL("../../manifest.yaml", import.meta.url), "utf-8");
    assert.equal(pkg.version, /^version: *(\S+)$/m.exec(manifest)[1]);
    assert.equal(pkg.type, "module");
    assert.deepEqual(pkg.exports["."], { types: "./gcite-client.d.ts", default: "./gcite-client.js" });
    assert.equal(pkg.dependencies, undefined);
  });
});

describe("readEvents", () => {
  it("reads a fetch Response: the protocol's events in order, the comment skipped", async () => {
    const got = await events(new Response(STREAM));
    assert.deepEqual(names(got), ["ready", "sources", "text", "cite", "text", "done"]);
    assert.deepEqual(got[1].data.sources, [SOURCE]);
    assert.equal(got[2].data.text, "答案“引号”");
  });

  it("gives the same events whatever the pieces: one byte at a time, characters split, CRLF split", async () => {
    const whole = await events(new Response(STREAM));
    for (const text of [STREAM, STREAM.replaceAll("\n", "\r\n"), STREAM.replaceAll("\n", "\r")]) {
      for (const size of [1, 2, 3, 7, 64]) {
        assert.deepEqual(await events(Readable.from(pieces(text, size))), whole, `size ${size}`);
      }
    }
  });

  it("reads a ReadableStream of text and an iterable of strings", async () => {
    const stream = new ReadableStream({ start(c) { c.enqueue(STREAM.slice(0, 50)); c.enqueue(STREAM.slice(50)); c.close(); } });
    assert.deepEqual(names(await events(stream)), ["ready", "sources", "text", "cite", "text", "done"]);
    assert.deepEqual(names(await events([STREAM])), ["ready", "sources", "text", "cite", "text", "done"]);
  });

  it("skips ping, comments, unknown and nameless events, and joins data lines", async () => {
    const body = ": keep-alive\n\nevent: ping\ndata: {}\n\nevent: future_event\ndata: {\"x\": 1}\n\n"
      + "data: {\"event\": \"message\"}\n\nevent: text\ndata: {\"text\":\ndata: \"a\"}\n\n" + sse(DONE);
    const got = await events(new Response(body));
    assert.deepEqual(got, [{ event: "text", data: { text: "a" } }, { event: "done", data: DONE[1] }]);
  });

  it("ends at done or error: nothing after it is read as an event", async () => {
    assert.deepEqual(names(await events(new Response(STREAM + sse(["text", { text: "never" }])))),
                     ["ready", "sources", "text", "cite", "text", "done"]);
    const failed = await events(new Response(sse(["text", { text: "半" }], ["error", { code: "app_error", message: "出错了" }],
                                                 ["text", { text: "never" }])));
    assert.deepEqual(failed.at(-1), { event: "error", data: { code: "app_error", message: "出错了" } });
    assert.equal(failed.length, 2);
  });

  it("ends a cut stream with an incomplete error, as gcite.client does", async () => {
    for (const body of ["", ": open\n\n", sse(["text", { text: "半" }]), sse(["text", { text: "半" }]) + "event: text\ndata: {\"te"]) {
      const got = await events(new Response(body));
      assert.deepEqual(got.at(-1), { event: "error", data: { code: "incomplete",
                                                             message: "the connection closed before the answer was complete" } });
      assert.equal(got.filter((e) => e.event === "error").length, 1);
    }
  });

  it("ends with incomplete when the connection breaks mid-body", async () => {
    const broken = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(sse(["text", { text: "a" }]))); },
                                        pull(c) { c.error(new TypeError("terminated")); } });
    assert.deepEqual(names(await events(broken)), ["text", "error"]);
  });

  it("turns data that is not a JSON object into one bad_stream error", async () => {
    for (const data of ["{broken", "[1, 2]", "null", "\"text\""]) {
      const got = await events(new Response(`event: sources\ndata: ${data}\n\n` + sse(DONE)));
      assert.deepEqual(got, [{ event: "error", data: { code: CLIENT_ERRORS.badStream,
                                                       message: "the server sent an unreadable sources event" } }]);
    }
  });

  it("throws an abort instead of making it an event", async () => {
    const aborted = new ReadableStream({ pull(c) { c.error(new DOMException("stopped", "AbortError")); } });
    await assert.rejects(events(aborted), { name: "AbortError" });
  });

  it("cancels the body when the reader stops early, and finishes it after the last event", async () => {
    let cancelled = 0;
    const body = () => new ReadableStream({
      start(c) { c.enqueue(new TextEncoder().encode(STREAM)); },  // never closed: the server would go on
      cancel() { cancelled += 1; },
    });
    for await (const item of readEvents(body())) if (item.event === "text") break;  // the caller stops early
    assert.equal(cancelled, 1);
    let pulls = 0;
    const finished = new ReadableStream({
      start(c) { c.enqueue(new TextEncoder().encode(STREAM)); },
      pull(c) { pulls += 1; c.close(); },
      cancel() { cancelled += 1; },
    });
    assert.equal((await events(finished)).at(-1).event, "done");
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(cancelled, 1);  // the rest was read to its end, not cancelled
    assert.ok(pulls >= 1);
  });

  it("reads 20,000 events in one piece in linear time", async () => {
    const many = (n) => sse(...Array.from({ length: n }, (_, i) => ["text", { text: `t${i}` }]), DONE);
    const time = async (n) => { const t = performance.now(); await events(new Response(many(n))); return performance.now() - t; };
    await time(1000);  // warm up
    const small = await time(5000), large = await time(20000);
    assert.ok(large < 2000, `${large} ms`);
    assert.ok(large / Math.max(small, 1) < 10, `5,000 events ${small} ms, 20,000 ${large} ms`);
  });
});

describe("collect", () => {
  it("gives the answer with [n] and done's fields, as gcite.client.collect does", async () => {
    const extra = { citation_recall_proxy: 1, uncited_sentences: [] };
    const result = await collect(readEvents(new Response(STREAM.replace('"message_id":"m"', `"message_id":"m","citation_recall_proxy":1,"uncited_sentences":[]`))));
    assert.deepEqual(result, { ...extra, status: "cited", answer: "答案“引号”[1]。", citations: DONE[1].citations,
                               invalid_ids: [], conversation: "c1.mac", message_id: "m" });
  });

  it("starts again at replace, and gives no partial answer on an error", async () => {
    const replaced = await collect([{ event: "text", data: { text: "old" } }, { event: "replace", data: { text: "new" } }, { event: "done", data: DONE[1] }]);
    assert.equal(replaced.answer, "new");
    const seen = [];
    const failed = await collect([{ event: "text", data: { text: "半" } }, { event: "error", data: { code: "app_error", message: "m" } }],
                                 (e) => seen.push(e.event));
    assert.deepEqual(failed, { status: "error", error: { code: "app_error", message: "m" } });
    assert.deepEqual(seen, ["text", "error"]);
    assert.deepEqual(await collect([]), { status: "error", error: { code: "incomplete", message: "the connection closed before the answer was complete" } });
  });
});

describe("safeUrl", () => {
  it("keeps http(s) URLs and nothing else", () => {
    assert.equal(safeUrl(" https://example.com/a?b=1 "), "https://example.com/a?b=1");
    assert.equal(safeUrl("http://127.0.0.1:8765/x"), "http://127.0.0.1:8765/x");
    for (const bad of ["javascript:alert(1)", "JAVASCRIPT:alert(1)", "data:text/html,x", "oss://bucket/a.pdf", "//example.com",
                       "/relative", "https://exa mple.com", "https://example.com/\u0000", "http://", "", null, 3, {}]) {
      assert.equal(safeUrl(bad), "", String(bad));
    }
  });
});

describe("Chat, with a fetch the test writes", () => {
  const answering = (...responses) => {
    const calls = [];
    const fetch = async (url, init) => { calls.push({ url, ...init, body: JSON.parse(init.body) }); return responses.shift()(); };
    return { calls, fetch };
  };

  it("posts the question with the token, then continues with the handle of the last done", async () => {
    const { calls, fetch } = answering(() => new Response(STREAM), () => new Response(STREAM.replace("c1.mac", "c1.mac2")));
    let minted = 0;
    const chat = new Chat({ url: "https://dify.example.com/e/h/gcite/chat", token: async () => `jwt-${++minted}`, fetch });
    const first = await chat.ask("第一个问题");
    assert.equal(first.status, "cited");
    assert.equal(chat.conversation, "c1.mac");
    await chat.ask("第二个问题");
    assert.deepEqual(calls.map((c) => [c.url, c.method, c.headers.Authorization, c.headers["Content-Type"], c.body]), [
      ["https://dify.example.com/e/h/gcite/chat", "POST", "Bearer jwt-1", "application/json", { query: "第一个问题" }],
      ["https://dify.example.com/e/h/gcite/chat", "POST", "Bearer jwt-2", "application/json", { query: "第二个问题", conversation: "c1.mac" }],
    ]);
    assert.equal(chat.conversation, "c1.mac2");
    chat.reset();
    assert.equal(chat.conversation, null);
  });

  it("makes a refused request one error event with the endpoint's code, message and status", async () => {
    const refused = () => Response.json({ code: "expired_token", message: "Your session has expired" }, { status: 401 });
    const { fetch } = answering(refused, () => new Response("Bad Gateway", { status: 502 }));
    const chat = new Chat({ url: "http://x.test/chat", token: "t", fetch });
    const got = [];
    for await (const item of chat.stream("q")) got.push(item);
    assert.deepEqual(got, [{ event: "error", data: { code: "expired_token", message: "Your session has expired", status: 401 } }]);
    assert.deepEqual(await chat.ask("q"), { status: "error", error: { code: "http_502", message: "the server answered 502" } });
  });

  it("makes a server it cannot reach a connection error, and throws an abort", async () => {
    const down = new Chat({ url: "http://x.test/chat", fetch: async () => { throw new TypeError("fetch failed"); } });
    assert.deepEqual(await down.ask("q"), { status: "error", error: { code: "connection", message: "cannot reach http://x.test/chat: TypeError" } });
    const stopped = new Chat({ url: "http://x.test/chat", fetch: async () => { throw new DOMException("stopped", "AbortError"); } });
    await assert.rejects(stopped.ask("q"), { name: "AbortError" });
  });

  it("refuses a missing url and an empty question", async () => {
    assert.throws(() => new Chat({}), { name: "TypeError", message: /url/ });
    await assert.rejects(new Chat({ url: "http://x.test/chat" }).ask("  "), { name: "TypeError", message: /query/ });
  });
});

// --- against gcite serve ----------------------------------------------------------------------------------------

const SERVE = process.env.GCITE_CHAT_URL;
const skip = SERVE ? false : "no gcite serve: run through tests/js/test_js_client.py";

function hs256(claims, secret) {  // the endpoint doc's token recipe, with node:crypto instead of a library
  const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const unsigned = `${part({ alg: "HS256", typ: "JWT" })}.${part(claims)}`;
  return `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}`;
}

async function sampleToken(id) {
  const users = await (await fetch(process.env.GCITE_USERS_URL)).json();
  return users.find((u) => u.id === id).token;
}

describe("against gcite serve", { skip }, () => {
  it("streams a cited answer: ready, sources before any text, cites of listed sources, one done at the end", async () => {
    const chat = new Chat({ url: SERVE, token: await sampleToken("wang") });
    const got = [];
    for await (const item of chat.stream("巡更时发现异常怎么上报？")) got.push(item);
    assert.equal(got[0].event, "ready");
    assert.ok(names(got).indexOf("sources") < names(got).indexOf("text"));
    assert.deepEqual(got.filter((e) => e.event === "done" || e.event === "error").map((e) => e.event), ["done"]);
    assert.equal(got.at(-1).event, "done");
    const listed = new Set(got.find((e) => e.event === "sources").data.sources.map((s) => s.id));
    const cites = got.filter((e) => e.event === "cite");
    assert.ok(cites.length >= 2 && cites.every((c) => c.data.ids.every((id) => listed.has(id))));
    const text = got.filter((e) => e.event === "text").map((e) => e.data.text).join("");
    assert.ok(text.startsWith("巡检过程中如发现异常") && !text.includes("[C:"), text);
    const done = got.at(-1).data;
    assert.equal(done.status, "cited");
    assert.deepEqual(done.citations.map((c) => c.number), [1, 2]);
    assert.ok(done.citations.every((c) => safeUrl(c.url) === c.url || c.url === ""));
  });

  it("continues the conversation with the handle, and refuses it to another user", async () => {
    const chat = new Chat({ url: SERVE, token: await sampleToken("wang") });
    const first = await chat.ask("巡更时发现异常怎么上报？");
    assert.equal(first.status, "cited");
    assert.match(first.answer, /\[1\]/);
    assert.equal(chat.conversation, first.conversation);
    const second = await chat.ask("会议室怎么预约？");
    assert.ok(second.answer.includes("会议室须提前在楼宇小程序预约"), second.answer);
    assert.equal(second.conversation.split(".")[0], first.conversation.split(".")[0]);  // the same conversation
    const other = new Chat({ url: SERVE, token: await sampleToken("li"), conversation: first.conversation });
    const refused = [];
    for await (const item of other.stream("会议室怎么预约？")) refused.push(item);
    assert.equal(refused.length, 1);
    assert.equal(refused[0].data.status, 403);
    assert.equal(refused[0].data.code, "forbidden");
  });

  it("takes a token minted with the secret of --secret-file, as the endpoint doc mints one", async () => {
    const secret = readFileSync(process.env.GCITE_SECRET_FILE, "utf-8").trim();
    const token = hs256({ sub: "my-user", roles: ["前台"], exp: Math.floor(Date.now() / 1000) + 900 }, secret);
    const result = await new Chat({ url: SERVE, token }).ask("How do I register a visitor?");
    assert.equal(result.status, "cited");
    assert.ok(result.citations.some((c) => c.document_title.includes("isitor")), JSON.stringify(result.citations));
    const forged = hs256({ sub: "my-user", roles: ["前台"], exp: Math.floor(Date.now() / 1000) + 900 }, "x".repeat(43));
    const refused = await new Chat({ url: SERVE, token: forged }).ask("How do I register a visitor?");
    assert.deepEqual(refused, { status: "error", error: { code: "invalid_token", message: refused.error.message } });
  });

  it("is answered with CORS headers for the app's origin, and refused for another", async () => {
    const token = await sampleToken("guest");
    const app = process.env.GCITE_APP_ORIGIN;
    let headers;
    const fetcher = async (url, init) => { const r = await fetch(url, init); headers = r.headers; return r; };
    const chat = new Chat({ url: SERVE, token, headers: { Origin: app }, fetch: fetcher });
    assert.equal((await chat.ask("会议室怎么预约？")).status, "cited");
    assert.equal(headers.get("access-control-allow-origin"), app);
    const elsewhere = new Chat({ url: SERVE, token, headers: { Origin: "http://elsewhere.example" } });
    const refused = await elsewhere.ask("会议室怎么预约？");
    assert.equal(refused.error.code, "origin_not_allowed");
  });

  it("stops when aborted, and the server answers the next question", async () => {
    const chat = new Chat({ url: SERVE, token: await sampleToken("wang") });
    const controller = new AbortController();
    const seen = [];
    await assert.rejects((async () => {
      for await (const item of chat.stream("巡更时发现异常怎么上报？", { signal: controller.signal })) {
        seen.push(item.event);
        if (item.event === "sources") controller.abort();
      }
    })(), { name: "AbortError" });
    assert.ok(!seen.includes("done"));
    assert.equal((await chat.ask("会议室怎么预约？")).status, "cited");
  });

  it("says connection when nothing listens", async () => {
    const url = new URL(SERVE);
    url.port = "9";  // discard: nothing listens there
    assert.equal((await new Chat({ url, token: "t" }).ask("q")).error.code, "connection");
  });
});

// G-Cite reference chat page: the page's own ES module, no build step, no dependencies.
//
// It is also the reference for other front ends. Reading the stream is not here: `gcite-client.js` beside it (the
// @gcite/client module, clients/js/ in the repository, the same file an app installs from npm) sends the question and
// yields the protocol's events; this module is what a page adds to them. What it does, in order:
//   1. gets a token: from the URL fragment (#token=…), or from postMessage of the embedding site, never a query string;
//   2. asks through the client's `Chat` (POST {query, conversation} to ./chat with the token; the events ready,
//      sources, text, cite, replace, done, error — see docs/protocol.md);
//   3. draws the answer from `text` and `cite` events as they come (appending, not redrawing): text through a small
//      markdown renderer that only creates elements and text nodes (never parsed HTML), each citation a superscript
//      number kept on one line with the character before it and the punctuation after it;
//   4. on `done`, draws the sources bar from `done.citations` (only cited sources, in display order); a weak
//      citation's popover says why it is weak.
// All model and source text enters the page through textContent / createTextNode.

import { Chat, CLIENT_ERRORS, safeUrl } from "./gcite-client.js";

const TEXT = {
  en: {
    title: "G-Cite", ask: "Ask", placeholder: "Ask a question…", user: "User", noRoles: "no role",
    sources: "Sources", rag: "Knowledge base", web: "Web", open: "Open source", close: "Close",
    insufficient: "The available sources do not answer this question.",
    weak: "This source may not support the sentence that cites it", hideWeak: "Hide weak citations",
    examples: "Try asking",
    list: (items) => items.map((x) => `“${x}”`).join(", "),
    reasons: {  // why a citation is weak (the validator's `reasons`); c = the sentence's side, s = the source's
      missing: (items) => `Not found in the source: ${items}`,
      negation: (c, s) => (c ? `The sentence negates it (“${c}”), the source does not` : `The source negates it (“${s}”)`),
      antonym: (c, s) => `Opposite words: “${c}” in the sentence, “${s}” in the source`,
      number: (c, s) => `Another number: ${c} in the sentence, ${s} in the source`,
      roles: (c, s) => `Roles swapped: “${c}” in the sentence, “${s}” in the source`,
      scope: (c) => `The source does not say “${c}”`,
      unchecked: () => "Not checked: the answer was too long to check in time",
    },
    accessMissing: "No access token: open this page with #token=… or embed it and send the token with postMessage.",
    errors: {
      connection: "The connection was lost before the answer was complete.",
      unauthorized: "Your session is not valid (sign in again).",
      forbidden: "This conversation cannot be continued with your sign-in.",
      http: "The server refused the request.",
      unreadable: "The server's answer could not be read.",
    },
    thinking: "Searching the sources…",
  },
  zh: {
    title: "G-Cite", ask: "提问", placeholder: "请输入问题…", user: "用户", noRoles: "无角色",
    sources: "来源", rag: "知识库", web: "网页", open: "打开来源", close: "关闭",
    insufficient: "现有资料无法回答这个问题。",
    weak: "该来源可能不支持引用它的句子", hideWeak: "隐藏弱引用",
    examples: "可以这样问",
    list: (items) => items.map((x) => `“${x}”`).join("、"),
    reasons: {
      missing: (items) => `来源中未找到：${items}`,
      negation: (c, s) => (c ? `句子作了否定（“${c}”），来源没有` : `来源作了否定（“${s}”）`),
      antonym: (c, s) => `意思相反：句中是“${c}”，来源是“${s}”`,
      number: (c, s) => `数字不同：句中是 ${c}，来源是 ${s}`,
      roles: (c, s) => `主客颠倒：句中是“${c}”，来源是“${s}”`,
      scope: (c) => `来源中没有“${c}”这样的说法`,
      unchecked: () => "未核对：回答太长，未能及时核对",
    },
    accessMissing: "缺少访问令牌：请用 #token=… 打开本页，或嵌入本页后通过 postMessage 发送令牌。",
    errors: {
      connection: "回答尚未完成，连接已中断。",
      unauthorized: "登录状态无效，请重新登录。",
      forbidden: "无法以当前登录身份继续该对话。",
      http: "服务器拒绝了请求。",
      unreadable: "无法读取服务器的回答。",
    },
    thinking: "正在检索资料…",
  },
};
export const lang = (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
const T = TEXT[lang];

// ---------------------------------------------------------------------------------------------------------------
// A safe markdown renderer: paragraphs, headings, lists, **strong**, *em*, `code`, fenced code. It builds nodes;
// markdown links, images and HTML stay literal text. CITE (a private-use character, removed from model text) marks
// where each citation goes; `cite(k)` returns the node for the k-th one. Every CITE of the text becomes a node,
// whatever construct it sits in or after (a fence line too), so the k-th node is always the k-th citation.
//
// It appends: `feed(text)` adds text at the end. What no later character can change is drawn once: finished lines,
// and the start of the unfinished line (its block, and its text up to the first `*`, `_` or backtick that may still
// open a construct). Only the rest of the unfinished line is drawn again by the next `feed`, undoing what drawing it
// changed. An event costs that rest, not the whole answer.

export const CITE = "\uE000";
const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+?\*\*|__[^_\n]+?__)|(\*[^*\s][^*\n]*?\*|_[^_\s][^_\n]*?_)|(\uE000)/g;
const CLOSE = /[.,;:!?%)\]}»”’、。，．；：！？％）］｝】」』》〉…]/;  // punctuation that must not start a line
const CLOSING = new RegExp(`${CLOSE.source}+`, "y");
const FENCE = /^\s*```(.*)$/;
const GROUP = 32;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** How much of an unfinished line's inline text is final: never inside a construct, up to the first `*`, `_` or
 *  backtick that may still open one (an `*` or `_` before a space cannot, nor a backtick before a backtick), never
 *  just before a citation or a closing punctuation mark (they join what precedes them), and never the last
 *  character (a citation may follow it). */
function settled(text) {
  const cuttable = (i) => i < text.length - 1 && text[i] !== CITE && !CLOSE.test(text[i]);
  const open = (i) => (text[i] === "`" ? text[i + 1] !== "`" : "*_".includes(text[i]) && !/\s/.test(text[i + 1] || "x"));
  let cut = 0, p = 0;
  for (const m of [...text.matchAll(INLINE), { index: text.length, 0: "" }]) {
    for (; p <= m.index; p++) {
      if (cuttable(p)) cut = p;
      if (p < m.index && open(p)) return cut;
    }
    p = m.index + m[0].length;
  }
  return cut;
}

export class Markdown {
  constructor(root, cite = () => document.createTextNode("")) {
    this.root = root;
    this.cite = cite;
    // where the next line goes; `line`: the element the unfinished line's text goes on into, once its block is drawn
    this.at = { paragraph: null, list: null, code: null, group: null, line: null, cites: 0 };
    this.rest = "";     // the unfinished line (from where its drawing stopped for good)
    this.drawn = null;  // what drawing `rest` changed: {at: the state before, nodes: the nodes it added}
  }

  feed(text) {
    if (this.drawn) {
      for (const node of this.drawn.nodes) node.remove();
      this.at = this.drawn.at;
      this.drawn = null;
    }
    const lines = (this.rest + text).split("\n");
    this.rest = lines.pop();
    for (const line of lines) this.line(line);
    const at = this.at;
    if (!at.line && !at.code && /^\s*\S[^]{11}/.test(this.rest) && /\S/.test(this.rest.at(-1))
        && !FENCE.test(this.rest)) {
      [at.line, this.rest] = this.block(this.rest);  // its kind can no longer change: draw its block, keep its text
    }
    if (at.line) {
      const cut = settled(this.rest);
      this.inline(at.line, this.rest.slice(0, cut));
      this.rest = this.rest.slice(cut);
    }
    if (this.rest) {
      this.drawn = { at: { ...at }, nodes: [] };
      this.line(this.rest);
    }
    return this;
  }

  line(text) {
    const [parent, inline] = this.at.line ? [this.at.line, text] : this.block(text);
    this.at.line = null;
    if (parent) this.inline(parent, inline);
  }

  /** Draws the block a line starts or continues; returns the element its inline text goes into, and that text. */
  block(line) {
    const at = this.at;
    const fence = FENCE.exec(line);
    if (at.code) {  // inside a fenced block
      if (!fence) {
        this.code(at.code, (at.code.hasChildNodes() ? "\n" : "") + line);
        return [];
      }
      const pre = at.code.parentNode;
      at.code = null;
      return [pre, fence[1]];  // what follows the closing fence (a citation) ends the block
    }
    if (fence) {
      at.paragraph = at.list = null;
      const pre = this.add(this.group(), el("pre"));
      this.code(pre, fence[1].replace(/[^\uE000]/g, ""));  // the info string (a language) is not shown, its citations are
      at.code = pre.appendChild(el("code"));
      return [];
    }
    if (!line.trim()) { at.paragraph = at.list = null; return []; }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line);
    if (heading) {
      at.paragraph = at.list = null;
      return [this.add(this.group(), el(`h${Math.min(6, heading[1].length + 2)}`)), heading[2]];
    }
    if (item) {
      const tag = /\d/.test(item[1]) ? "OL" : "UL";
      if (!at.list || at.list.tagName !== tag) {
        at.list = this.add(this.group(), el(tag));
        if (tag === "OL") at.list.start = parseInt(item[1], 10);
      }
      at.paragraph = null;
      return [this.add(at.list, el("li")), item[2]];
    }
    if (at.list && /^\s+/.test(line)) return [at.list.lastChild, " " + line.trimStart()];  // a list item goes on
    at.list = null;
    if (at.paragraph) this.add(at.paragraph, el("br"));
    else at.paragraph = this.add(this.group(), el("p"));
    return [at.paragraph, line];
  }

  group() {  // blocks go in groups of GROUP: the browser's layout then walks a few groups, not every paragraph
    if (!this.at.group || this.at.group.childElementCount >= GROUP) this.at.group = this.add(this.root, el("div", "gc-group"));
    return this.at.group;
  }

  add(parent, node) {
    parent.append(node);
    if (this.drawn) this.drawn.nodes.push(node);
    return node;
  }

  inline(parent, text) {
    let last = 0;
    for (const m of text.matchAll(INLINE)) {
      let before = text.slice(last, m.index);
      last = m.index + m[0].length;
      if (m[4]) {  // a citation, glued to the character before it and to the closing punctuation after it
        const glue = el("span", "gc-glue");
        const char = /\S$/u.exec(before);
        if (char) before = before.slice(0, char.index);
        CLOSING.lastIndex = last;
        const after = CLOSING.exec(text);
        if (after) last += after[0].length;
        glue.append(char ? char[0] : "", this.cite(this.at.cites++), after ? after[0] : "");
        if (before) this.add(parent, document.createTextNode(before));
        this.add(parent, glue);
        continue;
      }
      if (before) this.add(parent, document.createTextNode(before));
      if (m[1]) this.code(this.add(parent, el("code")), m[1].slice(1, -1));
      else if (m[2]) this.inline(this.add(parent, el("strong")), m[2].slice(2, -2));
      else this.inline(this.add(parent, el("em")), m[3].slice(1, -1));
    }
    if (last < text.length) this.add(parent, document.createTextNode(text.slice(last)));
  }

  code(parent, text) {  // text as it is, each CITE a citation
    text.split(CITE).forEach((part, i) => {
      if (i) this.add(parent, this.cite(this.at.cites++));
      this.add(parent, document.createTextNode(part));
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// One answer: its state, and what the page shows of it. Text and citations are appended as they come; `done` and
// `error` add to what is shown; only `replace` draws the answer whole again.

const ICONS = {  // tiny inline SVG paths: a document for the knowledge base, a globe for the web
  rag: "M3.5 1.5h6l3 3v10h-9z M9.5 1.5v3h3 M5.5 8h5 M5.5 11h5",
  web: "M8 1a7 7 0 1 0 0 14A7 7 0 0 0 8 1z M1 8h14 M8 1c-3 3.5-3 10.5 0 14 M8 1c3 3.5 3 10.5 0 14",
};

function icon(type) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("class", "gc-icon");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", type === "web" ? ICONS.web : ICONS.rag);
  svg.append(path);
  return svg;
}

const REASON_CHARS = 300;  // a reason line in the popover, at most (issue 34: the page drew 40,000 characters)

/** Why a weak citation is weak, as lines in the page's language: from its `reasons` (objects with a `kind`), else
 *  its one-line `reason`, else a bare `missing` list. Unknown kinds are shown as they are. */
export function reasons(citation) {
  const text = (x) => (typeof x === "string" || typeof x === "number" ? String(x) : "");
  const list = (items) => T.list((Array.isArray(items) ? items : []).map(text).filter(Boolean));
  if (Array.isArray(citation.reasons) && citation.reasons.length) {
    return citation.reasons.map((r) => {
      const kind = text(r && r.kind);
      if (kind === "missing") return list(r.items) && T.reasons.missing(list(r.items));
      if (Object.hasOwn(T.reasons, kind)) return T.reasons[kind](text(r.claim), text(r.source));
      return kind;
    }).filter(Boolean);
  }
  if (text(citation.reason)) return [text(citation.reason)];
  if (Array.isArray(citation.missing) && citation.missing.length) return [T.reasons.missing(list(citation.missing))];
  return [];
}

export class Answer {
  constructor(container, popover) {
    this.container = container;   // element the answer is drawn into
    this.popover = popover;
    this.text = "";                // the answer so far, each citation a CITE character
    this.cites = [];               // the numbers of each citation, in order
    this.sources = new Map();      // chunk id -> source (from the `sources` event)
    this.byNumber = new Map();     // display number -> source or citation (citation once `done` came)
    this.status = "streaming";     // streaming | cited | uncited | insufficient_evidence | error
    this.error = null;
    this.done = null;
    this.draw();
  }

  /** Applies one protocol event; returns true when the answer is finished (done or error). */
  apply(event, data) {
    data = data && typeof data === "object" ? data : {};
    switch (event) {
      case "sources":
        for (const s of data.sources || []) this.sources.set(String(s.id), s);
        return false;
      case "text":
        this.append(String(data.text || "").replaceAll(CITE, "\uFFFD"));
        return false;
      case "cite": {
        const numbers = data.numbers || [], ids = data.ids || [], known = this.byNumber.size;
        numbers.forEach((n, i) => {
          if (!this.byNumber.has(n)) this.byNumber.set(n, this.sources.get(String(ids[i])) || { id: ids[i] });
        });
        this.cites.push(numbers);
        this.append(CITE);
        if (this.byNumber.size > known) this.drawSources();
        return false;
      }
      case "replace":  // Dify's message_replace: drop what was shown for this answer
        this.text = String(data.text || "").replaceAll(CITE, "\uFFFD");
        this.cites = [];
        this.byNumber.clear();
        this.draw();
        return false;
      case "done":  // what the stream drew stays: the numbers take the citations' flags, the bar their sources
        this.done = data;
        this.status = data.status;
        this.byNumber.clear();
        for (const c of data.citations || []) this.byNumber.set(c.number, c);
        if ((data.citations || []).some((c) => c.weak === true)) {
          document.getElementById("gc-weak-toggle")?.removeAttribute("hidden");
        }
        for (const button of this.body.querySelectorAll(".gc-num")) this.mark(button, Number(button.dataset.number));
        this.show();
        return true;
      case "error":
        this.status = "error";
        this.error = data;
        this.show();
        return true;
      default:
        return false;  // ready, and events a newer server may add
    }
  }

  fail(code, message) { return this.apply("error", { code, message }); }

  append(text) {
    if (!text) return;
    this.thinking?.remove();
    this.text += text;
    this.markdown.feed(text);
  }

  draw() {  // the whole answer, from its text
    this.container.replaceChildren();
    this.body = this.container.appendChild(el("div", "gc-body"));
    this.markdown = new Markdown(this.body, (k) => this.superscript(this.cites[k] || []));
    this.markdown.feed(this.text);
    this.thinking = this.text ? null : this.body.appendChild(el("p", "gc-thinking", T.thinking));
    this.bar = null;
    this.show();
  }

  show() {  // what the answer's status adds to its text
    const box = this.container;
    box.classList.toggle("gc-streaming", this.status === "streaming");
    box.classList.toggle("gc-failed", this.status === "error");
    if (this.status !== "streaming") this.thinking?.remove();
    if (this.status === "insufficient_evidence") {  // said once: the model's own words, or the page's when it said none
      if (this.text.trim()) this.body.classList.add("gc-insufficient");
      else this.body.append(el("p", "gc-insufficient", T.insufficient));
    }
    if (this.status === "error") {
      const code = String(this.error.code);
      const known = Object.hasOwn(T.errors, code) ? T.errors[code] : "";  // the page's own codes only
      const message = typeof this.error.message === "string" ? this.error.message : "";
      box.append(el("div", "gc-error", message || known || T.errors.http));
    }
    this.drawSources();
  }

  drawSources() {
    const numbers = [...this.byNumber.keys()].sort((a, b) => a - b);
    const bar = numbers.length ? this.sourcesBar(numbers) : document.createTextNode("");
    if (this.bar) this.bar.replaceWith(bar);
    else this.container.append(bar);
    this.bar = bar;
  }

  superscript(numbers) {
    const sup = el("sup", "gc-cite");
    numbers.forEach((n) => {
      const button = el("button", "", String(n));
      button.type = "button";
      button.dataset.number = n;
      this.mark(button, n);
      button.addEventListener("click", (e) => this.showSource(n, e.currentTarget));
      sup.append(button);
    });
    return sup;
  }

  mark(button, n) {  // a superscript number's look: its source's type, hollow when weak
    const source = this.byNumber.get(n) || {};
    const weak = source.weak === true;
    button.className = `gc-num gc-${source.source_type === "web" ? "web" : "rag"}${weak ? " gc-weak" : ""}`;
    if (weak) button.title = `${T.weak}${typeof source.support === "number" ? ` (${source.support.toFixed(2)})` : ""}`;
    else button.removeAttribute("title");
  }

  sourcesBar(numbers) {
    // one chip per source: passages of the same document (same type, title, subtitle and link) share a chip
    const groups = new Map();
    for (const n of numbers) {
      const s = this.byNumber.get(n);
      const key = JSON.stringify([s.source_type, s.document_title, s.display_subtitle, s.url]);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(n);
    }
    const bar = el("nav", "gc-sources");
    bar.setAttribute("aria-label", T.sources);
    for (const group of groups.values()) {
      const s = this.byNumber.get(group[0]);
      const chip = el("button", `gc-source gc-${s.source_type === "web" ? "web" : "rag"}`);
      chip.type = "button";
      chip.dataset.number = group[0];
      chip.dataset.numbers = group.join(",");
      if (group.every((n) => this.byNumber.get(n).weak === true)) { chip.classList.add("gc-weak"); chip.title = T.weak; }
      for (const n of group) {
        const badge = chip.appendChild(el("span", "gc-num", String(n)));
        badge.dataset.number = n;
      }
      chip.append(icon(s.source_type));
      chip.append(el("span", "gc-title", s.document_title || s.site_name || s.id || ""));
      if (s.display_subtitle) chip.append(el("span", "gc-sub", s.display_subtitle));
      chip.addEventListener("click", (e) => {
        const badge = e.target.closest("[data-number]");
        this.showSource(Number(badge ? badge.dataset.number : group[0]), e.currentTarget);
      });
      bar.append(chip);
    }
    return bar;
  }

  showSource(n, anchor) {
    const s = this.byNumber.get(n) || {};
    const pop = this.popover;
    pop.replaceChildren();
    const head = el("div", "gc-pop-head");
    head.append(el("span", "gc-num", String(n)), icon(s.source_type),
      el("span", "gc-pop-kind", s.source_type === "web" ? T.web : T.rag));
    const close = el("button", "gc-pop-close", "×");
    close.type = "button";
    close.setAttribute("aria-label", T.close);
    close.addEventListener("click", () => { pop.hidden = true; });
    head.append(close);
    pop.append(head, el("div", "gc-pop-title", s.document_title || ""));
    const sub = [s.display_subtitle, s.site_name, s.published_date].map((x) => (typeof x === "string" ? x : ""))
      .filter((x, i, all) => x && !all.slice(0, i).some((before) => before.includes(x)));  // each said once
    if (sub.length) pop.append(el("div", "gc-pop-sub", sub.join(" · ")));
    const unchecked = Array.isArray(s.reasons) && s.reasons.some((r) => r && r.kind === "unchecked");
    if (s.weak === true || unchecked) {  // unchecked (past the support check's work budget): says so, not "weak"
      if (s.weak === true) pop.append(el("div", "gc-pop-weak", T.weak));
      const why = reasons(s);
      // a reason line is cut to REASON_CHARS and wraps anywhere: a 40,000-character reason is never a 200,000-pixel box
      const shown = why.slice(0, 8).map((line) => (line.length > REASON_CHARS ? `${line.slice(0, REASON_CHARS - 1)}…` : line));
      if (shown.length) {
        const list = pop.appendChild(el("ul", "gc-pop-reasons"));
        list.style.overflowWrap = "anywhere";
        list.append(...shown.map((line) => el("li", "", line)));
      }
    }
    if (s.snippet) pop.append(el("blockquote", "gc-pop-snippet", s.snippet));
    const href = safeUrl(s.url || "");
    if (href) {
      const link = el("a", "gc-pop-link", T.open);
      link.href = href;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      pop.append(link);
    }
    pop.className = `gc-popover gc-${s.source_type === "web" ? "web" : "rag"}`;
    pop.hidden = false;
    const r = anchor.getBoundingClientRect();
    pop.style.top = `${window.scrollY + r.bottom + 6}px`;
    pop.style.left = `${Math.max(8, Math.min(window.scrollX + r.left, window.innerWidth - pop.offsetWidth - 8))}px`;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The thread: one turn per question, asked through the client's Chat (which keeps the token and the conversation).

/** The page's words for an `error` event: a request the endpoint refused (it has an HTTP `status`) and the client's
 *  own errors in the page's language; the endpoint's error events keep their message (safe to show). */
function pageError(data) {
  const message = typeof data.message === "string" ? data.message : "";
  if (typeof data.status === "number") {
    const code = { 401: "unauthorized", 403: "forbidden" }[data.status] || "http";
    return { code, message: T.errors[code] + (message ? ` (${message})` : "") };
  }
  if (data.code === CLIENT_ERRORS.connection || data.code === CLIENT_ERRORS.incomplete) {
    return { code: "connection", message: T.errors.connection };
  }
  if (data.code === CLIENT_ERRORS.badStream) return { code: "http", message: T.errors.unreadable };
  return data;
}

export class Thread {
  constructor({ endpoint, thread, popover, onBusy = () => {} }) {
    Object.assign(this, { thread, popover, onBusy });
    this.client = new Chat({ url: endpoint });
  }

  get token() { return this.client.token; }
  set token(token) { this.client.token = token; }

  reset(token) {
    this.client.token = token;
    this.client.reset();
    this.thread.replaceChildren();
    this.popover.hidden = true;
  }

  async ask(query) {
    const turn = this.thread.appendChild(el("section", "gc-turn"));
    turn.append(el("div", "gc-question", query));
    const answer = new Answer(turn.appendChild(el("div", "gc-answer")), this.popover);
    this.onBusy(true);
    try {
      for await (const { event, data } of this.client.stream(query)) {
        if (event === "error") answer.apply("error", pageError(data && typeof data === "object" ? data : {}));
        else answer.apply(event, data);
      }
    } catch {
      if (answer.status === "streaming") answer.fail("connection", T.errors.connection);
    } finally {
      this.onBusy(false);
    }
    return answer;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The page: wiring, the token sources, and (served by `gcite serve` with #local) the sample-user picker with each
// sample user's example questions.
//
// Embedding: <iframe src="https://<dify>/e/<hook>/gcite/#parent=https://app.example.com">. The page posts
// {type: "gcite:ready"} to the parent (target origin = that `parent` value), and accepts
// {type: "gcite:token", token: "<JWT>"} only from window.parent and only when event.origin equals `parent`.
// Sending a new token (a refresh, or another user) starts a new conversation only if the token's subject changed.

function subject(token) {
  try {
    return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub;
  } catch { return null; }
}

export function start() {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = T[node.dataset.i18n];
  const $ = (id) => document.getElementById(id);
  const form = $("gc-ask"), query = $("gc-query"), send = $("gc-send"), notice = $("gc-notice");
  query.placeholder = T.placeholder;
  const chat = new Thread({
    endpoint: new URL("chat", document.baseURI).href,
    thread: $("gc-thread"),
    popover: $("gc-popover"),
    onBusy: (busy) => { send.disabled = busy || !chat.token; document.body.classList.toggle("gc-busy", busy); },
  });
  const examples = $("gc-examples");
  const offer = (questions) => {  // an empty page offers the user's example questions; clicking one asks it
    if (questions && !Array.isArray(questions)) questions = Object.hasOwn(questions, lang) ? questions[lang] : [];
    const list = (Array.isArray(questions) ? questions : []).filter((q) => typeof q === "string" && q.trim());
    examples.querySelector(".gc-example-list").replaceChildren(...list.slice(0, 3).map((q) => {
      const button = el("button", "gc-example", q);
      button.type = "button";
      button.addEventListener("click", () => { query.value = q; form.requestSubmit(); });
      return button;
    }));
    examples.hidden = !list.length;
  };
  const useToken = (token, questions) => {
    if (!token) return;
    if (subject(token) !== subject(chat.token || "")) {
      chat.reset(token);
      offer(questions);
    } else chat.token = token;
    notice.hidden = true;
    send.disabled = false;
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = query.value.trim();
    if (!q || !chat.token || send.disabled) return;
    query.value = "";
    examples.hidden = true;
    chat.ask(q);
  });
  query.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  document.addEventListener("click", (e) => {
    const pop = $("gc-popover");
    if (!pop.hidden && !pop.contains(e.target) && !e.target.closest(".gc-num, .gc-source")) pop.hidden = true;
  });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") $("gc-popover").hidden = true; });
  $("gc-hide-weak").addEventListener("change", (e) => document.body.classList.toggle("gc-hide-weak", e.target.checked));

  const params = new URLSearchParams(location.hash.slice(1));
  const parentOrigin = params.get("parent");
  if (params.get("token")) {
    useToken(params.get("token"));
    params.delete("token");  // keep the token out of the address bar and the history
    history.replaceState(null, "", `${location.pathname}${params.toString() ? `#${params}` : ""}`);
  }
  if (parentOrigin && window.parent !== window) {
    window.addEventListener("message", (e) => {
      if (e.source !== window.parent || e.origin !== parentOrigin) return;
      if (e.data && e.data.type === "gcite:token" && typeof e.data.token === "string") useToken(e.data.token);
    });
    window.parent.postMessage({ type: "gcite:ready" }, parentOrigin);
  }
  if (params.has("local")) localUsers(useToken).catch(() => { notice.hidden = false; });
  else if (!chat.token && !parentOrigin) notice.hidden = false;
}

async function localUsers(useToken) {
  // Only `gcite serve` answers /local/users: sample users, each with a token minted for their roles.
  const picker = document.getElementById("gc-user");
  const response = await fetch("/local/users");
  if (!response.ok) throw new Error("no sample users here");
  const users = await response.json();
  for (const u of users) {
    const option = el("option", "", `${u.name} — ${u.roles.length ? u.roles.join("、") : T.noRoles}`);
    option.value = u.token;
    picker.append(option);
  }
  // `examples` (optional): the user's example questions, a list or one list per language ({"en": […], "zh": […]})
  const pick = () => useToken(picker.value, users[picker.selectedIndex].examples);
  picker.addEventListener("change", pick);
  document.getElementById("gc-user-picker").hidden = false;
  pick();
}

if (document.getElementById("gc-ask")) start();

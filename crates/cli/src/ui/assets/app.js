// The inspector page: one view per memory, drawn from the server's /api/<view> answers.
// Every text from the store is set as text (never as markup).
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const main = document.getElementById("main");

async function api(view, input) {
  const response = await fetch("/api/" + view, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
    body: JSON.stringify(input || {}),
  });
  const text = await response.text();
  let body;
  try { body = JSON.parse(text); } catch { throw new Error(text.trim() || response.statusText); }
  if (!response.ok) throw new Error(body.error ? body.error.message : text);
  return body;
}

// h("tag", {attr: value, onclick: fn}, child, "text", [children]...)
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  const add = (child) => {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) child.forEach(add);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  };
  children.forEach(add);
  return el;
}

const link = (hash, text) => h("a", { href: "#" + hash }, text);
const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : n ?? "");
const pct = (x) => (typeof x === "number" ? (x * 100).toFixed(1) + "%" : "");
const bytes = (n) => (n >= 1048576 ? (n / 1048576).toFixed(1) + " MiB" : n >= 1024 ? (n / 1024).toFixed(1) + " KiB" : n + " B");
const enc = encodeURIComponent;
// A last write as the list gives it (RFC 3339, UTC), shown to the minute; "" when unknown.
const when = (t) => (t ? h("time", { datetime: t, title: t }, t.slice(0, 16).replace("T", " ")) : "");

const tr = (row, numeric = []) => h("tr", {}, row.map((cell, i) => h("td", { class: numeric.includes(i) ? "num" : null }, cell)));

function table(headers, rows, numeric = [], attrs = {}) {
  return h("div", { class: "table-wrap" },
    h("table", attrs,
      h("thead", {}, h("tr", {}, headers.map((t, i) => h("th", { class: numeric.includes(i) ? "num" : null, scope: "col" }, t)))),
      h("tbody", {}, rows.map((row) => tr(row, numeric)))));
}

// What an answer's `truncated` says of `list`: how many are shown of how many, and the
// cursor of the next page.
const cutOf = (data, list) => (data.truncated || {})[list];

// The "more" control of a list the server sends a page at a time: it says how many of how
// many are shown and, while more follow, asks for the next page (`next(cursor)` answers the
// next page's data) and hands its items to `add`. Nothing when the list came whole.
function more(cut, next, pick, add) {
  if (!cut) return null;
  let shown = cut.shown;
  let cursor = cut.next;
  const status = h("span", { class: "muted", role: "status" });
  const say = () => { status.textContent = "Showing " + fmt(shown) + " of " + fmt(cut.total) + "."; };
  say();
  const control = h("p", { class: "more" }, status);
  if (!cursor) return control;
  const button = h("button", { type: "button", onclick: async () => {
    button.disabled = true;
    try {
      const data = await next(cursor);
      const items = pick(data);
      add(items);
      shown += items.length;
      say();
      const after = cutOf(data, cut.list);
      cursor = after && after.next;
      if (cursor) button.disabled = false;
      else button.remove();
    } catch (error) {
      control.append(failure(error));
      button.disabled = false;
    }
  } }, "Show more");
  control.append(" ", button);
  return control;
}

// A table of a paged list: its first rows, then the "more" control that appends the next
// pages' rows. `list` names the list in the view's answer, `input` is the view's input.
function pagedTable(view, input, list, data, headers, toRow, numeric = [], pick = (d) => d[list]) {
  const items = pick(data) || [];
  let count = 0;
  const rowOf = (item) => toRow(item, count++);
  const wrap = table(headers, items.map(rowOf), numeric);
  const body = wrap.querySelector("tbody");
  const cut = cutOf(data, list);
  const control = more(cut && { ...cut, list }, (after) => api(view, { ...input, page: { list, after } }), (d) => pick(d) || [],
    (rows) => { rows.forEach((item) => body.append(tr(rowOf(item), numeric))); setBars(body); });
  return [wrap, control];
}

// A paged list drawn as `ul` items (the index of each memory).
function pagedList(view, input, list, data, toItem, pick = (d) => d[list]) {
  const ul = h("ul", {}, (pick(data) || []).map(toItem));
  const cut = cutOf(data, list);
  return [ul, more(cut && { ...cut, list }, (after) => api(view, { ...input, page: { list, after } }), (d) => pick(d) || [],
    (items) => items.forEach((item) => ul.append(toItem(item))))];
}

function sequence(steps) {
  return h("ol", { class: "seq" }, (steps || []).map((s) => h("li", {}, s)));
}

function bar(value) {
  return h("div", { class: "bar", role: "meter", "aria-valuemin": 0, "aria-valuemax": 1, "aria-valuenow": value, title: pct(value) },
    h("span", { style: null }, ""));
}

function setBars(root) {
  // CSP forbids inline styles in markup; widths are set as properties instead.
  root.querySelectorAll(".bar").forEach((el) => {
    el.firstChild.style.width = Math.max(0, Math.min(1, Number(el.getAttribute("aria-valuenow")))) * 100 + "%";
  });
}

function show(title, ...content) {
  main.replaceChildren(h("h1", {}, title), ...content.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  setBars(main);
  main.focus({ preventScroll: true });
}

function failure(error) {
  return h("p", { class: "error", role: "alert" }, error.message);
}

// Forget: a confirmation naming what goes, then memory_forget (or another forget `view`),
// then the view again (or, when the view's subject itself is gone, the list it was chosen
// from).
async function forget(target, description, back, view = "forget") {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent =
    "This erases " + description + " from the database, for good. It cannot be undone.";
  dialog.returnValue = "";
  dialog.showModal();
  await new Promise((resolve) => dialog.addEventListener("close", resolve, { once: true }));
  if (dialog.returnValue !== "forget") return;
  try {
    const gone = { description, counts: await api(view, target) };
    if (back && location.hash !== back) {
      pendingNotice = gone;
      location.hash = back;
    } else {
      route(gone);
    }
  } catch (error) {
    main.prepend(failure(error));
  }
}

let pendingNotice = null;

function forgetButton(target, description, back) {
  return h("button", { class: "danger", type: "button", "aria-label": "Forget " + description, onclick: () => forget(target, description, back) }, "Forget…");
}

function forgotten(notice) {
  if (!notice || notice.approved) return null;
  const counts = Object.entries(notice.counts).filter(([, v]) => typeof v === "number" && v > 0).map(([k, v]) => v + " " + k.replace("_", " "));
  // What went is the description up to its first ": " (a writer's source holds a colon).
  const what = notice.description.split(": ")[0];
  return h("p", { class: "ok", role: "status" }, "Forgotten: " + what + (counts.length ? " (" + counts.join(", ") + ")" : ""));
}

// ---- Overview ----
const listOf = (name) => (data) => (data.list || {})[name];

async function overview(notice) {
  const data = await api("overview");
  const list = data.list;
  const stats = data.stats;
  const card = (title, body) => h("section", { class: "card" }, h("h3", {}, title), body);
  const section = (name, empty, headers, toRow, numeric) => (list[name] || []).length
    ? pagedTable("overview", {}, name, data, headers, toRow, numeric, listOf(name))
    : h("p", { class: "muted" }, empty);
  const sites = (s) => s.sites.join(", ") + (s.sites_total ? " … (" + fmt(s.sites_total) + " in all)" : "");
  show("What the memory holds",
    forgotten(notice),
    h("p", { class: "muted" }, data.database, " · schema ", stats.schema_version, stats.size_bytes != null ? " · " + bytes(stats.size_bytes) : ""),
    h("h2", {}, "Procedural memory"),
    section("partitions", "No partitions.", ["Partition", "Episodes", "Patterns", "Below threshold", "Size", "Last write", "Fields"],
      (p) => [link("/procedural/" + enc(p.partition), p.partition), fmt(p.episodes), fmt(p.patterns), fmt(p.pending_groups), bytes(p.bytes), when(p.last_write), (p.fields || []).join(", ")], [1, 2, 3, 4]),
    h("h2", {}, "Browser memory"),
    section("browser_scopes", "No browser scopes.", ["Scope", "Sites", "Trajectories", "Last write"],
      (s) => [link("/browser/" + enc(s.scope), s.scope), sites(s), fmt(s.trajectories), when(s.last_write)], [2]),
    h("h2", {}, "Coding sessions"),
    section("turn_sessions", "No sessions.", ["Session", "Events", "Size", "Last write"],
      (s) => [link("/turns/" + enc(s.session), s.session), fmt(s.events), bytes(s.bytes), when(s.last_write)], [1, 2]),
    h("h2", {}, "Recordings"),
    section("tool_log_sessions", "No recordings.", ["Session", "Tool calls", "Size", "Last write"],
      (s) => [link("/recordings/" + enc(s.session), s.session), fmt(s.logs), bytes(s.bytes), when(s.last_write)], [1, 2]),
    h("h2", {}, "Notes"),
    section("note_scopes", "No notes.", ["Scope", "Notes", "Size", "Last write", "Held for review"],
      (s) => [link("/notes/" + enc(s.scope), s.scope), fmt(s.notes), bytes(s.bytes), when(s.last_write), s.held ? link("/review", fmt(s.held)) : ""], [1, 2, 4]),
    h("h2", {}, "Tables"),
    h("div", { class: "grid" }, card("Rows", table(["Table", "Rows"], stats.tables.map((t) => [t.name, fmt(t.rows)]), [1]))));
}

// The index of one memory: the overview's list of it, a page at a time.
async function index(title, name, empty, toItem, notice) {
  const data = await api("overview");
  return show(title, forgotten(notice),
    (data.list[name] || []).length ? pagedList("overview", {}, name, data, toItem, listOf(name)) : h("p", { class: "muted" }, empty));
}

// ---- Procedural ----
function chart(points) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 640 200");
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "Confidence after each of " + points.length + " episodes");
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text) e.textContent = text;
    svg.append(e);
  };
  const times = points.map((p) => Date.parse(p.at));
  const t0 = Math.min(...times), t1 = Math.max(...times);
  const x = (t) => 40 + (t1 > t0 ? ((t - t0) / (t1 - t0)) * 590 : 295);
  const y = (c) => 180 - c * 170;
  el("line", { class: "axis", x1: 40, y1: y(0), x2: 630, y2: y(0) });
  el("line", { class: "axis", x1: 40, y1: y(1), x2: 630, y2: y(1) });
  el("text", { x: 4, y: y(1) + 4 }, "1.0");
  el("text", { x: 4, y: y(0) + 4 }, "0.0");
  el("text", { x: 40, y: 196 }, new Date(t0).toISOString().slice(0, 10));
  el("text", { x: 560, y: 196 }, new Date(t1).toISOString().slice(0, 10));
  el("polyline", { class: "line", points: points.map((p, i) => x(times[i]).toFixed(1) + "," + y(p.confidence).toFixed(1)).join(" ") });
  return svg;
}

const pairs = (fingerprint) => Object.entries(fingerprint).map(([k, v]) => k + "=" + v).join(", ");

async function procedural(name, notice) {
  if (!name) {
    return index("Procedural memory", "partitions", "No partitions.",
      (p) => h("li", {}, link("/procedural/" + enc(p.partition), p.partition), " · ", fmt(p.episodes), " episodes"), notice);
  }
  const input = { partition: name };
  const data = await api("partition", input);
  const fields = data.fields || [];
  const detail = h("div", { id: "pattern-detail" });
  const patternRow = (p) => [
    pairs(p.fingerprint),
    h("span", {}, pct(p.confidence), bar(p.confidence)),
    fmt(p.evidence_count) + " (" + fmt(p.corroborations) + " ✓, " + fmt(p.contradictions) + " ✗)",
    sequence(p.canonical_sequence),
    (p.last_reinforced || "").slice(0, 19),
    h("button", { type: "button", onclick: () => timeline(name, p.fingerprint, detail) }, "Chart"),
  ];
  const recallOut = h("div", { id: "recall-result" });
  const inputs = fields.map((f) => h("label", {}, f, h("input", { name: f, autocomplete: "off" })));
  const form = h("form", { class: "inline", "aria-label": "Recall", onsubmit: async (e) => {
    e.preventDefault();
    const fingerprint = {};
    for (const input of form.querySelectorAll("input")) if (input.value.trim()) fingerprint[input.name] = input.value.trim();
    try {
      const recalled = await api("recall", { partition: name, fingerprint, limit: 10 });
      recallOut.replaceChildren(recalled.patterns.length ? table(["#", "Fingerprint", "Score", "Confidence part (0.6 × c)", "Recency part", "Sequence"],
        recalled.patterns.map((p, i) => {
          const c = 0.6 * p.confidence;
          return [i + 1, pairs(p.fingerprint), (p.score ?? 0).toFixed(4), c.toFixed(4), ((p.score ?? 0) - c).toFixed(4), sequence(p.canonical_sequence)];
        }), [0, 2, 3, 4]) : h("p", { class: "muted" }, recalled.note || "Nothing matches."));
    } catch (error) { recallOut.replaceChildren(failure(error)); }
  } }, inputs, h("button", { type: "submit" }, "Recall"));
  const flagged = await api("review-patterns", input);
  show("Partition " + name, forgotten(notice), approvedNotice(notice),
    h("p", {}, forgetButton({ partition: name }, "partition " + name + ": its episodes, patterns and settings", "#/procedural")),
    flaggedPatterns(name, flagged),
    h("h2", {}, "Patterns, by fingerprint"),
    data.patterns.length ? pagedTable("partition", input, "patterns", data, ["Fingerprint", "Confidence", "Evidence", "Canonical sequence", "Last reinforced", ""], patternRow, [2])
      : h("p", { class: "muted" }, "No patterns yet."),
    detail,
    h("h2", {}, "Below the threshold"),
    data.pending.length ? pagedTable("partition", input, "pending", data, ["Fingerprint", "Episodes", "Most common sequence"],
      (g) => [pairs(g.fingerprint), fmt(g.episodes), sequence(g.canonical_sequence)], [1])
      : h("p", { class: "muted" }, "No group is waiting."),
    h("h2", {}, "Recall"),
    h("p", { class: "muted" }, "Enter a full or partial fingerprint."),
    form, recallOut);
}

async function timeline(partition, fingerprint, into) {
  try {
    const data = await api("timeline", { partition, fingerprint });
    const points = cutOf(data, "points");
    const episodes = cutOf(data, "episodes");
    const writers = (data.writers || []).map((w) => {
      const by = w.written_by || {};
      // Everything this writer recorded in the partition goes, and the patterns it fed are
      // rebuilt from the rest (trajectory_forget_by); an episode without a writer has none.
      const target = { partition, source: by.source, session: by.session, client: by.client };
      const who = [by.source, by.session && "session " + by.session, by.client && "through " + by.client].filter(Boolean).join(", ");
      const button = by.source ? h("button", { class: "danger", type: "button", "aria-label": "Forget what " + who + " recorded",
        onclick: () => forget(target, "every episode " + who + " recorded in partition " + partition + ": its patterns are rebuilt from the rest", null, "forget-writer") }, "Forget…") : "";
      return [by.source || "(not kept)", by.session || "", by.client || "", fmt(w.episodes), button];
    });
    into.replaceChildren(...[h("h3", {}, "Confidence after each episode of ", Object.values(fingerprint).join(" / ")), chart(data.points),
      points && h("p", { class: "muted" }, fmt(points.shown) + " evenly spaced points of " + fmt(points.total) + " episodes."),
      episodes && h("p", { class: "muted" }, "The first " + fmt(episodes.shown) + " episodes only."),
      writers.length && h("h4", {}, "Written by"),
      writers.length && table(["Source", "Session", "Client", "Episodes", ""], writers, [3])].filter(Boolean));
  } catch (error) { into.replaceChildren(failure(error)); }
}

// ---- Browser ----
// Who observed a site's fact or selector last, the time on hover.
const whoOf = (w) => h("span", { title: w.at }, [w.source, w.session ? " in " + w.session : "", w.client ? " through " + w.client : ""].join(""));
function siteCard(scope, s) {
  const more = (total, what) => (total ? h("p", { class: "muted" }, "The first " + fmt(s[what].length) + " of " + fmt(total) + " " + what + ".") : null);
  return h("section", { class: "card" },
    h("h3", {}, s.site, " ", forgetButton({ scope, site: s.site }, "site " + s.site + " of scope " + scope)),
    h("h4", {}, "Facts"),
    s.facts.length ? table(["Kind", "Key", "Value", "Confidence", "Sources", "Last seen", "Observed last by"], s.facts.map((f) => [f.kind, f.key, f.value, h("span", {}, pct(f.confidence), bar(f.confidence)), fmt(f.sources), f.last_seen, f.written_by ? whoOf(f.written_by) : ""]), [4]) : h("p", { class: "muted" }, "No facts."),
    more(s.facts_total, "facts"),
    h("h4", {}, "Selectors"),
    s.selectors.length ? table(["Element", "Selector", "Last ref", "Worked", "Found last by"], s.selectors.map((x) => [x.element, x.stable_selector || "", x.last_ref || "", fmt(x.success_count), x.written_by ? whoOf(x.written_by) : ""]), [3]) : h("p", { class: "muted" }, "No selectors."),
    more(s.selectors_total, "selectors"));
}

async function browser(scope, notice) {
  if (!scope) {
    return index("Browser memory", "browser_scopes", "No browser scopes.",
      (s) => h("li", {}, link("/browser/" + enc(s.scope), s.scope), " · ", fmt(s.sites_total || s.sites.length), " sites"), notice);
  }
  const input = { scope };
  const data = await api("browser", input);
  const contextOut = h("div", { id: "context-result" });
  const form = h("form", { class: "inline", "aria-label": "Context", onsubmit: async (e) => {
    e.preventDefault();
    const v = (n) => form.querySelector('[name="' + n + '"]').value;
    try {
      const ctx = await api("context", { scope, goal: v("goal"), url: v("url"), budget: Number(v("budget")) || undefined });
      contextOut.replaceChildren(
        table(["Part", "Priority", "Fate"], ctx.parts.map((p) => [p.label, p.priority, p.fate]), [1]),
        h("pre", {}, ctx.context || "(empty context)"));
    } catch (error) { contextOut.replaceChildren(failure(error)); }
  } },
    h("label", {}, "Goal", h("input", { name: "goal", required: true, size: 30 })),
    h("label", {}, "URL", h("input", { name: "url", required: true, size: 30, value: data.sites[0] ? "https://" + data.sites[0].site + "/" : "" })),
    h("label", {}, "Budget", h("input", { name: "budget", type: "number", min: 0, value: 8000 })),
    h("button", { type: "submit" }, "Show context"));
  const sites = h("div", {}, data.sites.map((s) => siteCard(scope, s)));
  const sitesCut = cutOf(data, "sites");
  show("Browser scope " + scope,
    h("p", {}, forgetButton({ scope }, "scope " + scope + ": its browser memory and its notes", "#/browser")),
    h("h2", {}, "Sites"),
    data.sites.length ? [sites, more(sitesCut && { ...sitesCut, list: "sites" }, (after) => api("browser", { ...input, page: { list: "sites", after } }),
      (d) => d.sites || [], (items) => { items.forEach((s) => sites.append(siteCard(scope, s))); setBars(sites); })]
      : h("p", { class: "muted" }, "No sites."),
    h("h2", {}, "Trajectories, newest first"),
    data.trajectories.length ? pagedTable("browser", input, "trajectories", data, ["Goal", "Origin", "Steps", "Verified", "Outcome", "Age", "Written by", ""],
      (t) => [t.goal, t.origin || "", fmt(t.steps.length), fmt(t.verified), t.success ? h("span", { class: "ok" }, "success") : h("span", { class: "bad" }, "failure"),
        t.age_days == null ? t.timestamp : t.age_days.toFixed(1) + " d",
        t.written_by ? [t.written_by.source, t.written_by.session && t.written_by.session !== t.id ? " in " + t.written_by.session : "", t.written_by.client ? " through " + t.written_by.client : ""].join("") : "",
        forgetButton({ trajectory: t.id, in_scope: scope }, "trajectory " + t.id + " (" + t.goal + ")")], [2, 3])
      : h("p", { class: "muted" }, "No trajectories."),
    h("h2", {}, "Runs"),
    data.runs.length ? pagedTable("browser", input, "runs", data, ["Run", "Goal", "Status", "Domain", "Started", ""],
      (r) => [r.run_id, r.goal, r.status, r.domain, r.started_at, forgetButton({ run: r.run_id, in_scope: scope }, "run " + r.run_id)])
      : h("p", { class: "muted" }, "No runs."),
    h("h2", {}, "Context"),
    h("p", { class: "muted" }, "The exact context an agent would receive, and each part's fate."),
    form, contextOut);
}

// ---- Turns ----
const PROVIDERS = ["openai_chat", "openai_responses", "anthropic", "gemini", "genkit"];

const writerOf = (w) => [w.source, w.session ? " in " + w.session : "", w.client ? " through " + w.client : "", " at " + w.at].join("");
const eventOf = (e) => h("div", { class: "event " + e.kind }, h("strong", {}, e.kind),
  e.written_by ? h("span", { class: "muted" }, " · written by " + writerOf(e.written_by)) : "",
  h("pre", {}, typeof e.payload === "string" ? e.payload : JSON.stringify(e.payload, null, 2)));

async function turns(session, notice, provider = "openai_chat") {
  if (!session) {
    return index("Coding sessions", "turn_sessions", "No sessions.",
      (s) => h("li", {}, link("/turns/" + enc(s.session), s.session), " · ", fmt(s.events), " events"), notice);
  }
  const input = { session, provider };
  const data = await api("session", input);
  const tabs = h("div", { class: "tabs", role: "group", "aria-label": "Provider format" },
    PROVIDERS.map((p) => h("button", { type: "button", "aria-pressed": p === provider ? "true" : "false", onclick: () => turns(session, null, p).catch((e) => main.replaceChildren(failure(e))) }, p)));
  const events = h("div", {}, data.events.map(eventOf));
  const eventsCut = cutOf(data, "events");
  const viewCut = cutOf(data, "view");
  // Screened only when the inspector replays the session (the model view is drawn).
  const flagged = data.view ? await api("review-outputs", { session }) : null;
  show("Session " + session, approvedNotice(notice),
    h("p", {}, forgetButton({ session }, "session " + session + ": its turn-memory events and its recorded tool calls", "#/turns")),
    flaggedOutputs(session, flagged),
    h("h2", {}, "History"),
    events,
    more(eventsCut && { ...eventsCut, list: "events" }, (after) => api("session", { ...input, page: { list: "events", after } }),
      (d) => d.events || [], (items) => items.forEach((e) => events.append(eventOf(e)))),
    h("h2", {}, "Model view"),
    tabs,
    data.view ? h("pre", { "data-provider": provider }, JSON.stringify(data.view.messages, null, 2))
      : h("p", { class: "muted" }, viewCut ? "Not drawn: the session holds " + fmt(viewCut.total) + " events, more than the inspector replays." : "No events."));
}

// ---- Recordings ----
async function recordings(session, notice) {
  if (!session) {
    return index("Recordings", "tool_log_sessions", "No recordings.",
      (s) => h("li", {}, link("/recordings/" + enc(s.session), s.session), " · ", fmt(s.logs), " tool calls"), notice);
  }
  const input = { session };
  const data = await api("recording", input);
  const trailCut = cutOf(data, "trail");
  show("Recording " + session,
    h("p", {}, forgetButton({ session }, "session " + session + ": its recorded tool calls and its turn-memory events", "#/recordings")),
    h("h2", {}, "Tool calls"),
    data.calls.length ? pagedTable("recording", input, "calls", data, ["#", "Tool", "Written by", "Parameters"],
      (c, i) => {
        const { written_by: by, ...call } = c || {};
        return [i + 1, (call.toolName || call.tool_name || call.name) || "", by ? writerOf(by) : "", h("pre", {}, JSON.stringify(call, null, 2))];
      }, [0])
      : h("p", { class: "muted" }, "No calls."),
    h("h2", {}, "Trail"),
    data.trail ? h("pre", {}, data.trail.trail)
      : h("p", { class: "muted" }, trailCut ? "Not drawn: the recording holds " + fmt(trailCut.total) + " calls, more than the inspector templatizes." : "No trail."),
    h("h2", {}, "Lint"),
    data.lint && data.lint.findings.length ? table(["Key", "Where", "Found in", "Why"], data.lint.findings.map((f) => [f.key, f.location, f.found_in, f.reason]))
      : h("p", { class: "muted" }, "No findings."));
}

// ---- Notes ----
// A note as the store holds it: each line of its text in a row of its own, set as text, so
// a tab, a line that looks like a listing and markup all show as they are.
function noteLines(text) {
  return table(["Line", "Text"], text.split("\n").map((line, i) => [i + 1, line]), [0], { class: "note" });
}

async function notes(scope, notice, path = "/memories") {
  if (!scope) {
    return index("Notes", "note_scopes", "No notes.",
      (s) => h("li", {}, link("/notes/" + enc(s.scope), s.scope), " · ", fmt(s.notes), " notes"), notice);
  }
  const input = { scope, path };
  const data = await api("notes", input);
  const here = h("p", {}, h("code", {}, data.path), data.path !== "/memories" ? [" · ", h("a", { href: "#/notes/" + enc(scope) }, "back to /memories")] : null);
  const body = data.kind === "note"
    ? [h("p", { class: "muted" }, "A note of " + fmt(data.text.split("\n").length) + " lines."), noteLines(data.text),
      h("h2", {}, "Versions"), versionTable(data.versions || [])]
    : data.entries.length
      ? [h("p", { class: "muted" }, fmt(data.total) + " notes at or below " + data.path + "."),
        pagedTable("notes", input, "entries", data, ["Note", "Size"],
          (e) => [h("a", { href: "#/notes/" + enc(scope) + "/" + enc(e.path) }, e.path), bytes(e.bytes)], [1])]
      : h("p", { class: "muted" }, "No notes.");
  show("Notes of " + scope,
    h("p", {}, forgetButton({ scope }, "scope " + scope + ": its notes and its browser memory", "#/notes")),
    here, body);
}

// Who wrote each version of a note, and what the write screen found in it.
function versionTable(versions) {
  return table(["Version", "Status", "Source", "Session", "Client", "Written", "Findings"],
    versions.map((v) => [v.version, v.status, v.provenance.source, v.provenance.session || "",
      v.provenance.client || "", when(v.provenance.at), (v.reasons || []).join("; ")]), [0]);
}

// ---- Review ----
// A notice of an approval made on a session's or a partition's page.
function approvedNotice(notice) {
  return notice && notice.approved ? h("p", { class: "ok", role: "status" }, notice.description) : null;
}

// The patterns of a partition the write screen flags, each text set as text, with the
// reasons; under quarantine recall leaves one out until a person approves it here.
function flaggedPatterns(partition, data) {
  if (!data.patterns.length) return null;
  const approve = async (p) => {
    try {
      await api("approve-pattern", { partition, fingerprint: p.fingerprint });
      await procedural(partition, { approved: true, description: "Pattern approved: recall returns it.", counts: {} });
    } catch (error) { main.prepend(failure(error)); }
  };
  return [h("h2", {}, "Patterns the write screen flags: " + fmt(data.patterns.length)),
    h("p", { class: "muted" }, "Screen policy: " + data.policy + (data.policy === "quarantine" ? ". Recall leaves out a pattern not approved." : ".")),
    data.patterns.map((p) => h("section", { class: "held" },
      h("h3", {}, pairs(p.fingerprint), p.approved ? " · approved" : ""),
      p.reasons.length ? h("ul", {}, p.reasons.map((r) => h("li", {}, r))) : null,
      table(["#", "Action"], p.canonical_sequence.map((a, i) => [i + 1, a]), [0]),
      p.approved ? null : h("p", {}, h("button", { type: "button", "aria-label": "Approve pattern " + pairs(p.fingerprint), onclick: () => approve(p) }, "Approve"))))];
}

// The tool outputs of a session the write screen flags, each set as text, with the reasons;
// under quarantine the model view withholds one until a person approves it here.
function flaggedOutputs(session, data) {
  if (!data || !data.outputs.length) return null;
  const approve = async (o) => {
    try {
      await api("approve-output", { session, call_id: o.call_id });
      await turns(session, { approved: true, description: "Output of call " + o.call_id + " approved: the model view shows it.", counts: {} });
    } catch (error) { main.prepend(failure(error)); }
  };
  return [h("h2", {}, "Tool outputs the write screen flags: " + fmt(data.outputs.length)),
    h("p", { class: "muted" }, "Screen policy: " + data.policy + (data.policy === "quarantine" ? ". The model view withholds an output not approved." : ".")),
    data.outputs.map((o) => h("section", { class: "held" },
      h("h3", {}, "call " + o.call_id + " · " + o.tool + (o.approved ? " · approved" : "")),
      h("ul", {}, o.reasons.map((r) => h("li", {}, r))),
      noteLines(o.output),
      o.approved ? null : h("p", {}, h("button", { type: "button", "aria-label": "Approve output of call " + o.call_id, onclick: () => approve(o) }, "Approve"))))];
}

// The items the write screen held: each with its text (set as text), who wrote it and why,
// approved or rejected (forgotten) by the person reading this page.
async function decide(view, item) {
  try {
    await api(view, { scope: item.scope, path: item.path, version: item.version });
    route({ description: item.path + ": " + (view === "approve" ? "approved" : "rejected"), counts: {} });
  } catch (error) {
    main.prepend(failure(error));
  }
}

// A held browser run: decided on by its id, in its scope.
async function decideRun(view, run) {
  try {
    await api(view, { scope: run.scope, id: run.id });
    route({ description: "run " + run.id + ": " + (view === "approve-run" ? "approved" : "rejected"), counts: {} });
  } catch (error) {
    main.prepend(failure(error));
  }
}

// What a held browser run would store, each text set as text, with who wrote it and why.
function heldRun(run) {
  return h("section", { class: "held" },
    h("h2", {}, run.scope + " · run " + run.id + " · " + run.site),
    h("p", {}, "Written by ", h("code", {}, run.provenance.source),
      run.provenance.session ? [" in session ", h("code", {}, run.provenance.session)] : null,
      run.provenance.client ? [" through ", h("code", {}, run.provenance.client)] : null,
      " at ", when(run.provenance.at)),
    h("ul", {}, run.reasons.map((r) => h("li", {}, r))),
    table(["Goal", "Outcome"], [[run.goal, run.outcome]]),
    table(["#", "Page", "Action"], run.steps.map((s, i) => [i, s.url, s.action]), [0]),
    run.selectors.length ? table(["Element", "Selector"], run.selectors.map(([e, sel]) => [e, sel])) : null,
    h("p", {},
      h("button", { type: "button", "aria-label": "Approve run " + run.id, onclick: () => decideRun("approve-run", run) }, "Approve (record)"), " ",
      h("button", { class: "danger", type: "button", "aria-label": "Reject run " + run.id, onclick: () => decideRun("reject-run", run) }, "Reject (erase)")));
}

// The audit trail on the Review page: the newest page of what the filter takes, paged back
// with `before` (the page's first entry) and forward with `after` (its last).
const AUDIT_PAGE = 20;
const AUDIT_MEMORIES = ["notes", "browser", "trajectory", "turns", "recording", "store"];
const AUDIT_ACTIONS = ["write", "delete", "rename", "approve", "reject", "forget"];
let auditView = { memory: "", action: "", before: null, after: null };

async function auditSection() {
  const filter = {};
  if (auditView.memory) filter.memory = auditView.memory;
  if (auditView.action) filter.action = auditView.action;
  const cursor = auditView.after !== null ? { after: auditView.after } : { before: auditView.before ?? Number.MAX_SAFE_INTEGER };
  const trail = await api("audit", { ...filter, ...cursor, limit: AUDIT_PAGE });
  const first = trail.entries[0];
  const last = trail.entries[trail.entries.length - 1];
  const older = first ? (await api("audit", { ...filter, before: first.seq, limit: 1 })).entries.length > 0 : false;
  const newer = last ? (await api("audit", { ...filter, after: last.seq, limit: 1 })).entries.length > 0 : false;
  const go = (view) => { auditView = { ...auditView, ...view }; refreshAudit(); };
  const choose = (name, label, values) => h("label", {}, label + " ",
    h("select", { name, onchange: (event) => go({ [name]: event.target.value, before: null, after: null }) },
      h("option", { value: "" }, "all"),
      values.map((v) => h("option", { value: v, selected: auditView[name] === v }, v))));
  const which = [auditView.memory, auditView.action].filter(Boolean).join(" ");
  return h("section", { id: "audit" },
    h("h2", { tabindex: "-1" }, "Audit trail: " + fmt(trail.entries.length) + " of " + fmt(trail.total) + (which ? " " + which : "") + " entries" +
      (first ? ", #" + first.seq + " to #" + last.seq : "")),
    h("form", { class: "inline", "aria-label": "Audit trail filter and pages", onsubmit: (event) => event.preventDefault() },
      choose("memory", "Memory", AUDIT_MEMORIES), choose("action", "Action", AUDIT_ACTIONS),
      h("button", { type: "button", disabled: !older, onclick: () => go({ before: first.seq, after: null }) }, "Older"),
      h("button", { type: "button", disabled: !newer, onclick: () => go({ after: last.seq, before: null }) }, "Newer"),
      h("button", { type: "button", disabled: !newer, onclick: () => go({ before: null, after: null }) }, "Newest")),
    trail.entries.length
      ? table(["#", "Action", "Memory", "Scope", "Item", "By", "When", "Detail"],
        trail.entries.map((e) => [e.seq, e.action, e.memory, e.scope, e.item, e.by.source + (e.by.client ? " via " + e.by.client : ""), when(e.by.at), e.detail]), [0])
      : h("p", { class: "muted" }, "No entry."));
}

// Draws the audit section again in place, keeping the rest of the Review page.
async function refreshAudit() {
  try {
    const section = await auditSection();
    const old = document.getElementById("audit");
    if (old) old.replaceWith(section);
    section.querySelector("h2").focus();
  } catch (error) {
    main.prepend(failure(error));
  }
}

async function review(notice) {
  const data = await api("review", {});
  const audit = await auditSection();
  const decided = notice ? h("p", { class: "ok", role: "status" }, notice.description) : null;
  const held = data.held.length
    ? data.held.map((item) => h("section", { class: "held" },
      h("h2", {}, item.scope + " · " + item.path + " · version " + item.version),
      h("p", {}, "Written by ", h("code", {}, item.provenance.source),
        item.provenance.session ? [" in session ", h("code", {}, item.provenance.session)] : null,
        item.provenance.client ? [" through ", h("code", {}, item.provenance.client)] : null,
        " at ", when(item.provenance.at)),
      h("ul", {}, (item.reasons || []).map((r) => h("li", {}, r))),
      noteLines(item.text),
      h("p", {},
        h("button", { type: "button", "aria-label": "Approve " + item.path, onclick: () => decide("approve", item) }, "Approve"), " ",
        h("button", { class: "danger", type: "button", "aria-label": "Reject " + item.path, onclick: () => decide("reject", item) }, "Reject (forget)"))))
    : h("p", { class: "muted" }, data.runs.length ? "No note is held for review." : "Nothing is held for review.");
  const runs = data.runs.length
    ? [h("h2", {}, "Browser runs held for review: " + fmt(data.runs.length)), data.runs.map(heldRun)]
    : null;
  show("Review", decided,
    h("p", { class: "muted" }, "Screen policy: " + data.policy + ". A coding session's flagged tool outputs and a partition's flagged patterns are reviewed on the session's and the partition's own pages."), held, runs,
    audit);
}

// ---- Routing ----
async function route(notice) {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const [view, name, extra] = parts;
  document.querySelectorAll("nav a").forEach((a) => {
    const target = a.getAttribute("href").replace(/^#\/?/, "");
    a.toggleAttribute("aria-current", target === (view || ""));
    if (target === (view || "")) a.setAttribute("aria-current", "page");
  });
  try {
    switch (view || "") {
      case "": return await overview(notice);
      case "procedural": return await procedural(name, notice);
      case "browser": return await browser(name, notice);
      case "turns": return await turns(name, notice);
      case "recordings": return await recordings(name, notice);
      case "notes": return await notes(name, notice, extra || "/memories");
      case "review": return await review(notice);
      default: return show("Not found", h("p", {}, "No view ", view, "."));
    }
  } catch (error) {
    show("Something went wrong", failure(error));
  }
}

// The address never keeps a query (the token of a first login): the server already
// redirected it away, and no link here makes one.
if (location.search) history.replaceState(null, "", location.pathname + location.hash);

window.addEventListener("hashchange", () => {
  const notice = pendingNotice;
  pendingNotice = null;
  route(notice);
});
route();

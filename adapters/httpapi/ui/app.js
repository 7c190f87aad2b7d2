// The live sale page: plain JavaScript, no build step. It follows each open sale's
// event stream (GET /api/v1/vouchers/{id}/events: its remaining units and state as
// they change) and reads the public voucher list only to find new sales — every 10 s,
// or every second while a sale is open that no live stream follows (more sales than
// it follows, or a stream refused, cut or failed: see openStream). With an admin token
// (kept in this tab's sessionStorage) it also reads each voucher's stats and the
// Prometheus metrics every second, draws each sale's last minutes from samples it
// takes itself, and offers pause/resume, edit and end now. With any token it offers
// a grab of each live sale, as that token's user — in a waiting room, a join of its
// queue, its place as it moves, then the grab with its pass (see roomCell); a sale with
// a challenge ("challenge": "pow") is grabbed (or joined) with a proof of work the page
// solves itself (see solve), so a person never sees it. It tells time by the server's clock, never this device's (see
// serverNow).
"use strict";

const TOKEN_KEY = "seckill.adminToken";
const OUTCOMES = ["reserved", "sold_out", "already_purchased", "not_started", "ended", "paused",
  "rate_limited", "unavailable", "invalid", "not_found", "unauthorized", "denied", "queue_required", "challenge_required"];
const COUNTS = [["remaining", "remaining"], ["queued", "queued"], ["awaiting_payment", "awaiting payment"],
  ["paid", "paid"], ["cancelled", "cancelled"], ["expired", "expired"], ["failed", "failed"]];
const MAX_STATS = 20; // vouchers whose stats are read each second
// Streams followed at once: a browser holds at most 6 HTTP/1.1 connections to a host,
// and each stream keeps one; the rest stay free for the page's reads and actions.
const MAX_FOLLOWED = 4;
const LIST_EVERY_MS = 10000; // the list's reads while every open sale is followed
const WINDOW_MS = 5 * 60 * 1000; // what the charts show, and all the samples kept
const RATE_SPAN_MS = 5000; // grabs per second are averaged over this much
const SVG = "http://www.w3.org/2000/svg";

let previous = null; // last metrics sample: {at, counts}
let vouchers = []; // the last list read
let stats = {}; // voucher id → its last stats answer
let draws = {}; // draw voucher id → its last GET …/draw answer (anyone may read it)
let places = {}; // waiting-room voucher id → the token's user's place (GET …/queue), null when not in the queue
const series = new Map(); // voucher id → samples [{at (performance.now()), left, taken}], oldest first
let editing = null; // the voucher the edit form changes
let pendingEdit = null; // an edit sent and not answered: {id, body, key}; a retry of it keeps its key
let answers = 0; // vouchers shown from an action's answer: a list read before one is stale
const followed = new Map(); // voucher id → its EventSource
const live = new Set(); // voucher ids whose stream delivered an event since it last failed
const reopenAt = new Map(); // voucher id → performance.now() before which its stream, closed for good, is not opened again
let wanted = new Set(); // voucher ids whose stream the page wants
let events = 0; // voucher events received; eventSeen[id] is the count at id's last one
const eventSeen = {};
let listReadAt = -Infinity; // performance.now() of the last list read
let allFollowed = false; // every open sale listed can have its stream (no more than MAX_FOLLOWED)

// The server's clock, which judges every sale: a device's clock is often seconds off,
// and a countdown by it fires early or late. GET /api/v1/time is read as NTP reads a
// server: it read its clock about halfway through the round trip, so the shortest of a
// few round trips places it best. The reading is carried forward by performance.now(),
// this page's monotonic clock, so neither this device's wall clock nor a step of it
// enters the page's time.
let clock = null; // {serverMs, at (performance.now() when the server read serverMs), rtt}

async function measureClock() {
  let best = null;
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    const res = await fetch("/api/v1/time", { cache: "no-store" });
    const end = performance.now();
    if (!res.ok) continue;
    const body = await res.json();
    if (!best || end - start < best.rtt) best = { serverMs: body.unix_ms, at: (start + end) / 2, rtt: end - start };
  }
  if (best) clock = best;
}

// serverNow is the server's time now, in Unix ms; null until it is measured.
function serverNow() {
  return clock ? clock.serverMs + (performance.now() - clock.at) : null;
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// refusal is the error of an answer that is not 2xx: the contract's code and message.
// (An error without .refused is a request that got no answer.)
async function refusal(res) {
  const body = await res.json().catch(() => null);
  const e = body && body.error;
  return Object.assign(new Error(e ? `${e.code}: ${e.message}` : `HTTP ${res.status}`), { refused: true });
}

async function getJSON(path, auth) {
  const headers = auth ? { Authorization: "Bearer " + token() } : {};
  const res = await fetch(path, { headers, cache: "no-store" });
  if (!res.ok) throw new Error(path + ": " + (await refusal(res)).message);
  return res.json();
}

// idempotencyKey is 128 random bits in hex (crypto.getRandomValues works on plain
// http too, where crypto.randomUUID does not).
function idempotencyKey() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

// patchVoucher sends an edit and answers the voucher as it left it. The edit goes under
// an Idempotency-Key, kept until the server answers: sent again after a network
// failure (the same edit, say by a second click), it is done once.
async function patchVoucher(id, edit) {
  const body = JSON.stringify(edit);
  if (!pendingEdit || pendingEdit.id !== id || pendingEdit.body !== body) pendingEdit = { id, body, key: idempotencyKey() };
  const res = await fetch(`/api/v1/vouchers/${id}`, {
    method: "PATCH", body,
    headers: { Authorization: "Bearer " + token(), "Content-Type": "application/json", "Idempotency-Key": pendingEdit.key },
  });
  pendingEdit = null;
  if (!res.ok) throw await refusal(res);
  return res.json();
}

// saleState is the voucher's state as the server answered it, carried forward by the
// server's clock to now (between two reads a sale may begin or end), with the
// countdown to its next moment: "starts in …" while upcoming, "ends in …" until it ends.
function saleState(v, now) {
  let state = v.state;
  const begins = Date.parse(v.begins_at), ends = Date.parse(v.ends_at);
  if (now !== null && state !== "ended" && now >= ends) state = "ended";
  if (now !== null && state === "upcoming" && now >= begins) state = v.paused ? "paused" : v.remaining > 0 ? "live" : "sold_out";
  let countdown = "";
  if (now !== null && state === "upcoming") countdown = "starts in " + duration(begins - now);
  else if (now !== null && state !== "ended") countdown = "ends in " + duration(ends - now);
  return [state, countdown];
}

// duration spells ms as "1h 02m", "3m 05s" or "42s", rounded up to the second.
function duration(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  if (h > 0) return `${h}h ${two(m)}m`;
  if (m > 0) return `${m}m ${two(sec)}s`;
  return `${sec}s`;
}

// sample notes each listed voucher's units left and units taken (stock − remaining,
// which an edit of the stock leaves alone) and forgets what is older than the window
// or no longer listed. The samples are half a second apart at least: one taken sooner
// (events come up to ten a second, and an action's answer between two reads) updates
// the last one's figures and keeps its time, and the first is never updated, so a
// series always starts from what the page saw first.
function sample(list) {
  const at = performance.now();
  for (const v of list) {
    const s = series.get(v.id) || [];
    const point = { at, left: v.remaining, taken: v.stock - v.remaining };
    const last = s[s.length - 1];
    if (s.length > 1 && at - last.at < 500) s[s.length - 1] = { ...point, at: last.at }; else s.push(point);
    while (s.length > 0 && at - s[0].at > WINDOW_MS) s.shift();
    series.set(v.id, s);
  }
  const listed = new Set(list.map((v) => v.id));
  for (const id of series.keys()) if (!listed.has(id)) series.delete(id);
}

// rates are the grabs per second at each sample after the first: the units taken over
// the last RATE_SPAN_MS or so (one sample a second is too jumpy to read), net of
// units that came back (a cancelled or expired order's units show in the units left;
// a rate is never below zero).
function rates(s) {
  const out = [];
  for (let i = 1, j = 0; i < s.length; i++) {
    while (j < i - 1 && s[i].at - s[j].at > RATE_SPAN_MS) j++;
    // Over a second at least: two samples close together make no spike.
    const span = Math.max(s[i].at - s[j].at, 1000);
    out.push({ at: s[i].at, rate: Math.max(0, (s[i].taken - s[j].taken) * 1000 / span) });
  }
  return out;
}

// chart draws a sale's last minutes: units left (scaled to the stock, or to the most
// there were before units were removed) and grabs per second (scaled to the peak),
// time running left to right up to now. It spans the samples the page has, at least a
// minute and at most the window, so a sale watched for a minute fills the chart.
function chart(v) {
  const s = series.get(v.id) || [];
  const r = rates(s);
  const W = 240, H = 56, now = performance.now();
  const span = Math.min(WINDOW_MS, Math.max(60000, s.length ? now - s[0].at : 0));
  const maxLeft = Math.max(1, v.stock, ...s.map((p) => p.left));
  const peak = Math.max(0, ...r.map((p) => p.rate));
  const x = (at) => (W * (1 - (now - at) / span)).toFixed(1);
  const y = (value, max) => (H - 2 - (H - 4) * value / Math.max(max, 1)).toFixed(1);
  const left = s.map((p) => `${x(p.at)},${y(p.left, maxLeft)}`).join(" ");
  const rate = r.map((p) => `${x(p.at)},${y(p.rate, peak)}`).join(" ");
  const last = s.length ? s[s.length - 1].left : v.remaining;
  const lastRate = r.length ? r[r.length - 1].rate : 0;
  const minutes = Math.round(span / 60000);
  const label = `Last ${minutes} min: ${last} units left of ${maxLeft}; ` +
    `${lastRate.toFixed(1)} grabs per second now, peak ${peak.toFixed(1)}`;
  const g = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
    "aria-label": label, "data-samples": s.length, "data-peak-rate": peak.toFixed(2) });
  g.append(svg("line", { class: "axis", x1: 0, x2: W, y1: H - 1, y2: H - 1 }),
    svg("polyline", { class: "left", points: left }), svg("polyline", { class: "rate", points: rate }));
  return el("figure", { class: "chartbox" }, g, el("figcaption", {},
    el("span", { class: "key-left" }, `left ${last}`), " · ",
    el("span", { class: "key-rate" }, `${lastRate.toFixed(1)} grabs/s (peak ${peak.toFixed(1)})`),
    el("span", { class: "muted" }, ` · last ${minutes} min`)));
}

// counts lays a voucher's stats out as a table, one column per state of its units.
function counts(v, st) {
  if (!st) return el("p", { class: "muted" }, "stats not read");
  const head = el("tr", {}), body = el("tr", {});
  for (const [key, label] of COUNTS) {
    head.append(el("th", { scope: "col", class: "num" }, label));
    body.append(el("td", { class: "num", "data-count": key }, String(st[key])));
  }
  return el("div", {},
    el("table", { class: "counts", "aria-label": `units of voucher ${v.id} by state` }, el("thead", {}, head), el("tbody", {}, body)),
    el("p", { class: "muted small" }, `stock ${st.stock} · queue entries not yet acknowledged ${st.pending}` +
      (st.oldest_queued_ms !== undefined ? ` · oldest queued ${st.oldest_queued_ms} ms` : "") + " · on the waitlist ",
      el("span", { "data-waitlist": "" }, String(st.waitlist ?? 0))));
}

// drawState says where a draw voucher's draw stands: its entrants so far, or, once
// drawn, when, by which seed (its first hex digits; the whole is in GET …/draw) and how
// many won. Nothing for a voucher of another mode.
function drawState(v) {
  const d = draws[v.id];
  if (v.admission !== "draw" || !d) return "";
  if (!d.seed) return el("div", { class: "muted small", "data-draw": "entries" }, `draw: ${d.entrants} entered`);
  return el("div", { class: "muted small", "data-draw": "drawn" },
    `drawn ${new Date(d.drawn_at).toLocaleTimeString()} · ${d.entrants} entered · ${d.winners.length} won · seed `,
    el("code", { title: d.seed }, d.seed.slice(0, 12) + "…"));
}

function button(action, text, onClick, disabled) {
  const b = el("button", { type: "button", class: action, "data-action": action }, text);
  if (disabled) b.disabled = true;
  b.addEventListener("click", onClick);
  return b;
}

// rows are a voucher's row and, for admins, its detail row: the counts and the chart.
function rows(v, admin) {
  const sold = v.stock > 0 ? (v.stock - v.remaining) / v.stock : 0;
  const [state, countdown] = saleState(v, serverNow());
  const toggleAction = v.paused ? "resume" : "pause";
  const tr = el("tr", { "data-voucher-id": v.id },
    el("td", {}, v.id),
    el("td", { class: "title" }, v.title, drawState(v)),
    el("td", {}, el("span", { class: "badge " + state }, state), " ", el("span", { class: "countdown muted" }, countdown)),
    el("td", { class: "num remaining" }, String(v.remaining)),
    el("td", { class: "num stock" }, String(v.stock)),
    el("td", { class: "barcol" }, el("div", { class: "bar", title: Math.round(sold * 100) + "% sold" },
      el("div", { style: "width:" + (sold * 100).toFixed(1) + "%" }))),
    el("td", { class: "grabcol" }, token() === "" ? "" : v.admission === "waiting_room" ? roomCell(v, state) :
      button("grab", v.challenge === "pow" ? "grab (proof of work)" : "grab", () => grab(v), state !== "live" || grabbing.has(v.id))),
    el("td", { class: "admin-only actions" },
      button("toggle", toggleAction, () => toggle(v.id, toggleAction)),
      button("edit", "edit", () => openEdit(v)),
      button("end-now", "end now", () => endNow(v), state === "ended" || state === "upcoming")),
  );
  if (!admin) return [tr];
  const detail = el("tr", { class: "detail admin-only", "data-detail-for": v.id },
    el("td", { colspan: "8" }, el("div", { class: "detail-grid" }, counts(v, stats[v.id]), chart(v))));
  return [tr, detail];
}

// roomCell is what the token's user does in a waiting room: join its queue, then
// follow its place (position, how many are ahead, the estimated wait) until it is let
// in, then grab with its pass.
function roomCell(v, state) {
  const p = places[v.id];
  if (p === undefined || p === null) {
    return button("join", v.challenge === "pow" ? "join the queue (proof of work)" : "join the queue", () => joinQueue(v),
      state === "ended" || grabbing.has(v.id));
  }
  if (p.admitted && p.pass) return button("grab", "grab with your pass", () => grab(v), state !== "live" || grabbing.has(v.id));
  let text = p.position === null ? "in the queue: shuffled at the start" : `position ${p.position}, ${p.ahead} ahead`;
  if (p.sold_out) text = p.admitted ? "let in; sold out" : "sold out before your turn";
  else if (p.admitted) text = "let in; your pass was used or expired";
  else if (p.estimated_wait_seconds !== null && p.estimated_wait_seconds !== undefined) text += `, about ${duration(p.estimated_wait_seconds * 1000)}`;
  return el("span", { class: "muted small", "data-place": p.admitted ? "admitted" : "waiting" }, text);
}

// proofFor fetches a challenge of v for the token's user and solves it ("" when v
// asks for none).
async function proofFor(v) {
  if (v.challenge !== "pow") return "";
  note(`voucher ${v.id}: proving…`);
  const c = await getJSON(`/api/v1/vouchers/${v.id}/challenge`, true);
  return solve(c.challenge, c.difficulty);
}

// joinQueue puts the token's user in v's waiting room.
async function joinQueue(v) {
  grabbing.add(v.id);
  render();
  try {
    const proof = await proofFor(v);
    const res = await fetch(`/api/v1/vouchers/${v.id}/queue`, { method: "POST",
      headers: Object.assign({ Authorization: "Bearer " + token() }, proof ? { "X-Seckill-Pow": proof } : {}) });
    if (!res.ok) throw await refusal(res);
    places[v.id] = await res.json();
    note(`voucher ${v.id}: in the queue`);
  } catch (e) {
    note(`join ${v.id}: ${e.message}`, true);
  } finally {
    grabbing.delete(v.id);
  }
  refresh();
}

// render draws the list as last read; a button that had the focus keeps it.
function render() {
  const admin = token() !== "";
  document.body.classList.toggle("is-admin", admin);
  document.getElementById("admin-sign").hidden = !admin;
  const active = document.activeElement;
  const focused = active && active.dataset && active.dataset.action && active.closest("tr[data-voucher-id]");
  const keep = focused ? [focused.dataset.voucherId, active.dataset.action] : null;
  document.querySelector("#vouchers tbody").replaceChildren(...vouchers.flatMap((v) => rows(v, admin)));
  document.getElementById("empty").hidden = vouchers.length > 0;
  if (keep) {
    const b = document.querySelector(`tr[data-voucher-id="${keep[0]}"] button[data-action="${keep[1]}"]`);
    if (b) b.focus();
  }
}

// showVoucher puts a voucher as an answer left it on the page at once.
function showVoucher(v) {
  answers++;
  vouchers = vouchers.map((w) => (w.id === v.id ? v : w));
  render();
}

// follow opens the event stream of each open sale listed (not ended), up to
// MAX_FOLLOWED, and closes the streams of sales ended or no longer listed. It answers
// whether every open sale can be followed (else the list is read every second for
// them, as it is while a stream is down: see streamsLive).
function follow(list) {
  const open = list.filter((v) => saleState(v, serverNow())[0] !== "ended");
  wanted = new Set(open.slice(0, MAX_FOLLOWED).map((v) => v.id));
  for (const [id, es] of followed) if (!wanted.has(id)) { es.close(); followed.delete(id); live.delete(id); }
  const now = performance.now();
  for (const id of wanted) if (!followed.has(id) && (reopenAt.get(id) || 0) <= now) openStream(id);
  return open.length <= MAX_FOLLOWED;
}

// openStream follows voucher id's stream. The stream counts as live from its first
// event, not from its "open": a stream refused at the server's limit opens (200), holds
// only a retry: and closes. Any error takes it off the live ones until it delivers
// again, and the list is read every second meanwhile. EventSource reconnects by
// itself after most errors; after one it takes as final (an answer other than 200: a
// proxy's 502, say) the page opens the stream again a few seconds later.
function openStream(id) {
  const es = new EventSource(`/api/v1/vouchers/${id}/events`);
  es.addEventListener("voucher", (ev) => {
    if (!live.has(id)) { live.add(id); showFollowed(); }
    onVoucherEvent(JSON.parse(ev.data));
  });
  es.addEventListener("error", () => {
    live.delete(id);
    if (es.readyState === EventSource.CLOSED && followed.get(id) === es) {
      followed.delete(id);
      reopenAt.set(id, performance.now() + 2000 + Math.random() * 3000);
    }
    showFollowed();
  });
  followed.set(id, es);
}

// streamsLive tells whether every stream the page wants delivers.
function streamsLive() {
  for (const id of wanted) if (!live.has(id)) return false;
  return true;
}

// showFollowed marks the page with the streams that deliver and whether it polls.
function showFollowed() {
  let n = 0;
  for (const id of wanted) if (live.has(id)) n++;
  document.body.dataset.followed = String(n);
  document.body.dataset.polling = allFollowed && streamsLive() ? "0" : "1";
}

// onVoucherEvent shows a voucher as its stream sent it, and samples it for its chart.
function onVoucherEvent(v) {
  events++;
  eventSeen[v.id] = events;
  document.body.dataset.events = String(events);
  if (!vouchers.some((w) => w.id === v.id)) return;
  vouchers = vouchers.map((w) => (w.id === v.id ? v : w));
  sample(vouchers);
  render();
}

function note(text, error) {
  const n = document.getElementById("action-note");
  n.textContent = text;
  n.classList.toggle("error", !!error);
}

async function toggle(id, action) {
  try {
    const res = await fetch(`/api/v1/vouchers/${id}/${action}`, {
      method: "POST", headers: { Authorization: "Bearer " + token() } });
    if (!res.ok) throw await refusal(res);
    showVoucher(await res.json());
    note(`voucher ${id}: ${action}d`);
  } catch (e) {
    note(`${action} ${id}: ${e.message}`, true);
  }
  refresh();
}

// grab takes a unit of v for the token's user, with its pass (X-Seckill-Pass) in a
// waiting room. A sale with a challenge is grabbed
// with a proof (X-Seckill-Pow): the page fetches a challenge and solves it first; a
// refusal for want of one (the proof expired, or was spent) carries a fresh challenge,
// which the page solves and sends once more.
const grabbing = new Set(); // voucher ids whose grab is under way
async function grab(v) {
  grabbing.add(v.id);
  render();
  const pass = v.admission === "waiting_room" && places[v.id] ? places[v.id].pass : null;
  const send = (proof) => fetch(`/api/v1/vouchers/${v.id}/grab`, { method: "POST",
    headers: Object.assign({ Authorization: "Bearer " + token() }, proof ? { "X-Seckill-Pow": proof } : {},
      pass ? { "X-Seckill-Pass": pass } : {}) });
  try {
    let res = await send(await proofFor(v));
    if (res.status === 403 && v.challenge === "pow") {
      const e = ((await res.clone().json().catch(() => null)) || {}).error || {};
      if (e.code === "challenge_required" && e.challenge) res = await send(await solve(e.challenge, e.difficulty));
    }
    if (!res.ok) throw await refusal(res);
    const order = await res.json();
    note(`voucher ${v.id}: grabbed, order ${order.order_id} (${order.status})`);
  } catch (e) {
    note(`grab ${v.id}: ${e.message}`, true);
  } finally {
    grabbing.delete(v.id);
  }
  refresh();
}

// solve answers a proof-of-work challenge as the contract asks: the first decimal
// nonce whose SHA-256(challenge + ":" + nonce) starts with difficulty zero bits, by
// Web Crypto (which browsers offer on https and on localhost only), a batch of
// hashes at a time so the page stays responsive. It returns the proof,
// "<challenge>:<nonce>".
async function solve(challenge, difficulty) {
  if (!crypto.subtle) throw new Error("solving the sale's challenge needs Web Crypto: open this page over https (or on localhost)");
  const text = new TextEncoder();
  const BATCH = 512;
  for (let n = 0; ; n += BATCH) {
    const sums = await Promise.all(Array.from({ length: BATCH },
      (_, i) => crypto.subtle.digest("SHA-256", text.encode(`${challenge}:${n + i}`))));
    const i = sums.findIndex((sum) => leadingZeros(new Uint8Array(sum), difficulty));
    if (i >= 0) return `${challenge}:${n + i}`;
  }
}

// leadingZeros tells whether sum starts with at least bits zero bits.
function leadingZeros(sum, bits) {
  let i = 0;
  for (; bits >= 8; bits -= 8, i++) if (sum[i] !== 0) return false;
  return bits === 0 || sum[i] >> (8 - bits) === 0;
}

async function endNow(v) {
  if (serverNow() === null) { note("the server's clock is not read yet: try again in a moment", true); return; }
  if (!window.confirm(`End the sale of voucher ${v.id} (${v.title}) now? Grabs are refused from then on.`)) return;
  try {
    showVoucher(await patchVoucher(v.id, { ends_at: new Date(serverNow()).toISOString() }));
    note(`voucher ${v.id}: ended`);
  } catch (e) {
    note(`end ${v.id}: ${e.message}`, true);
  }
  refresh();
}

function openEdit(v) {
  editing = v.id;
  const form = document.getElementById("edit-form");
  form.reset();
  form.elements.per_user_limit.placeholder = String(v.per_user_limit);
  form.elements.title.placeholder = v.title;
  document.getElementById("edit-id").textContent = `${v.id} (${v.title}; ends ${new Date(Date.parse(v.ends_at)).toLocaleString()})`;
  document.getElementById("edit-result").textContent = "";
  document.getElementById("edit").hidden = false;
  form.elements.add_units.focus();
}

// editOf is the edit the form asks for: only the fields filled in.
function editOf(form) {
  const edit = {};
  for (const name of ["add_units", "remove_units", "per_user_limit"]) {
    const value = form.elements[name].value.trim();
    if (value !== "") edit[name] = Number(value);
  }
  if (form.elements.ends_at.value) edit.ends_at = new Date(form.elements.ends_at.value).toISOString();
  if (form.elements.title.value.trim()) edit.title = form.elements.title.value.trim();
  return edit;
}

async function submitEdit(ev) {
  ev.preventDefault();
  const form = ev.target, result = document.getElementById("edit-result");
  const edit = editOf(form);
  result.classList.remove("error");
  if (Object.keys(edit).length === 0) { result.textContent = "Nothing to change."; return; }
  try {
    const v = await patchVoucher(editing, edit);
    showVoucher(v);
    form.reset();
    result.textContent = `Saved: ${v.remaining} of ${v.stock} left, limit ${v.per_user_limit}, ${v.state}.`;
  } catch (e) {
    result.textContent = (e.refused ? "Refused: " : "No answer (send it again: it is done once): ") + e.message;
    result.classList.add("error");
  }
  refresh();
}

function setStatus(text, down) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.classList.toggle("down", !!down);
}

// parseMetrics reads the samples this page needs from the Prometheus text format.
function parseMetrics(text) {
  const counts = {}, gauges = {};
  for (const line of text.split("\n")) {
    let m = line.match(/^seckill_grab_requests_total\{outcome="([a-z_]+)"\} (\S+)$/);
    if (m) { counts[m[1]] = Number(m[2]); continue; }
    m = line.match(/^(seckill_fulfilment_lag_seconds|seckill_queue_pending|seckill_streams_open|seckill_webhook_backlog) (\S+)$/);
    if (m) gauges[m[1]] = Number(m[2]);
  }
  return { counts, gauges };
}

async function refreshMetrics() {
  const res = await fetch("/metrics", { cache: "no-store" });
  if (!res.ok) {
    document.getElementById("admin-note").textContent =
      "Metrics are not served on this listener (SECKILL_METRICS_ADDR): no rates here.";
    return;
  }
  const { counts, gauges } = parseMetrics(await res.text());
  const at = performance.now();
  const tbody = document.querySelector("#rates tbody");
  tbody.replaceChildren();
  for (const o of OUTCOMES) {
    let rate = "–";
    if (previous && at > previous.at && counts[o] !== undefined && previous.counts[o] !== undefined) {
      rate = ((counts[o] - previous.counts[o]) / ((at - previous.at) / 1000)).toFixed(1);
    }
    tbody.append(el("tr", { "data-outcome": o }, el("td", {}, o), el("td", { class: "num" }, rate),
      el("td", { class: "num muted" }, counts[o] === undefined ? "" : `total ${counts[o]}`)));
  }
  previous = { at, counts };
  const lag = gauges.seckill_fulfilment_lag_seconds;
  document.getElementById("lag").textContent = lag === undefined ? "–" : lag.toFixed(2) + " s";
  for (const [id, name] of [["pending", "seckill_queue_pending"], ["streams", "seckill_streams_open"],
    ["webhook-backlog", "seckill_webhook_backlog"]]) {
    document.getElementById(id).textContent = gauges[name] === undefined ? "–" : String(gauges[name]);
  }
}

async function load() {
  const seen = answers, since = events;
  listReadAt = performance.now();
  let list;
  try {
    list = await getJSON("/api/v1/vouchers", false);
  } catch (e) {
    setStatus("cannot read vouchers: " + e.message, true);
    return;
  }
  // A voucher whose stream told more since this read began keeps what it told.
  const read = (list.vouchers || []).map((v) => {
    const shown = vouchers.find((w) => w.id === v.id);
    return shown && (eventSeen[v.id] || 0) > since ? shown : v;
  });
  sample(read);
  const fresh = {}, freshDraws = {};
  await Promise.all(read.filter((v) => v.admission === "draw").slice(0, MAX_STATS).map(async (v) => {
    try { freshDraws[v.id] = await getJSON(`/api/v1/vouchers/${v.id}/draw`, false); }
    catch (e) { /* shown again at the next read */ }
  }));
  const freshPlaces = {};
  if (token() !== "") {
    await Promise.all(read.filter((v) => v.admission === "waiting_room" && v.state !== "ended").slice(0, MAX_STATS).map(async (v) => {
      const res = await fetch(`/api/v1/vouchers/${v.id}/queue`, { headers: { Authorization: "Bearer " + token() } }).catch(() => null);
      if (res && res.ok) freshPlaces[v.id] = await res.json();
      else if (res && res.status === 404) freshPlaces[v.id] = null;
      else if (v.id in places) freshPlaces[v.id] = places[v.id];
    }));
    await Promise.all(read.slice(0, MAX_STATS).map(async (v) => {
      try { fresh[v.id] = await getJSON(`/api/v1/vouchers/${v.id}/stats`, true); }
      catch (e) { document.getElementById("admin-note").textContent = e.message; }
    }));
    refreshMetrics().catch((e) => { document.getElementById("admin-note").textContent = e.message; });
  }
  if (seen !== answers) return; // read before an action's answer: the next read follows
  vouchers = read;
  stats = fresh;
  draws = freshDraws;
  places = freshPlaces;
  allFollowed = follow(read);
  showFollowed();
  render();
  const now = serverNow();
  const down = [...wanted].filter((id) => !live.has(id)).length;
  setStatus((now === null ? "updated (server clock not read yet)" : "updated " + new Date(now).toLocaleTimeString() + " server time") +
    (down > 0 ? ` · ${down} live stream${down > 1 ? "s" : ""} down: reading every second` : ""));
}

// refresh reads the page's data again; one read at a time, and one more after it when
// asked meanwhile (an action's answer must not be overwritten by an older read).
let loading = null, again = false;
function refresh() {
  if (loading) { again = true; return; }
  loading = load().finally(() => {
    loading = null;
    if (again) { again = false; refresh(); }
  });
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = document.getElementById("token");
  if (input.value.trim()) sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  input.value = "";
  document.getElementById("admin-note").textContent = "";
  previous = null;
  render();
  refresh();
});
document.getElementById("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  stats = {};
  editing = null;
  document.getElementById("edit").hidden = true;
  document.getElementById("admin-note").textContent = "";
  note("");
  render();
});
document.getElementById("edit-form").addEventListener("submit", submitEdit);
document.getElementById("edit-close").addEventListener("click", () => { document.getElementById("edit").hidden = true; });

// tick runs every second: the admin's reads, and the list's when it is due (every
// second while a sale is not followed by a live stream); otherwise the page only
// samples what its streams told and draws it again (the countdowns, the charts' time
// running on).
function tick() {
  if (token() !== "" || !allFollowed || !streamsLive() || performance.now() - listReadAt >= LIST_EVERY_MS) {
    refresh();
    return;
  }
  sample(vouchers);
  render();
}

// The clock first (the first list is then judged by it), measured again every minute.
measureClock().catch(() => {}).finally(() => { refresh(); setInterval(tick, 1000); });
setInterval(() => measureClock().catch(() => {}), 60000);

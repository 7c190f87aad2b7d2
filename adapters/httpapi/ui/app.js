// The live sale page: plain JavaScript, no build step. It reads the public voucher
// list every second; with an admin token (kept in this tab's sessionStorage) it also
// reads each voucher's stats and the Prometheus metrics, and offers pause/resume. It
// tells time by the server's clock, never this device's (see serverNow).
"use strict";

const TOKEN_KEY = "seckill.adminToken";
const OUTCOMES = ["reserved", "sold_out", "already_purchased", "not_started", "ended", "paused",
  "rate_limited", "unavailable", "invalid", "not_found", "unauthorized"];
const MAX_STATS = 20; // vouchers whose stats are read each second

let previous = null; // last metrics sample: {at, counts}

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

async function getJSON(path, auth) {
  const headers = auth ? { Authorization: "Bearer " + token() } : {};
  const res = await fetch(path, { headers, cache: "no-store" });
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const code = body && body.error ? body.error.code : res.status;
    throw new Error(path + ": " + code);
  }
  return body;
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

function row(v, stats) {
  const sold = v.stock > 0 ? (v.stock - v.remaining) / v.stock : 0;
  const [state, countdown] = saleState(v, serverNow());
  const tr = el("tr", { "data-voucher-id": v.id },
    el("td", {}, v.id),
    el("td", { class: "title" }, v.title),
    el("td", {}, el("span", { class: "badge " + state }, state), " ", el("span", { class: "countdown muted" }, countdown)),
    el("td", { class: "num remaining" }, String(v.remaining)),
    el("td", { class: "num" }, String(v.stock)),
    el("td", { class: "barcol" }, el("div", { class: "bar", title: Math.round(sold * 100) + "% sold" },
      el("div", { style: "width:" + (sold * 100).toFixed(1) + "%" }))),
  );
  const orders = el("td", { class: "admin-only orders" });
  if (stats) {
    orders.textContent = `queued ${stats.queued} · awaiting payment ${stats.awaiting_payment} · paid ${stats.paid}` +
      ` · cancelled ${stats.cancelled} · expired ${stats.expired} · failed ${stats.failed} · pending ${stats.pending}` +
      (stats.oldest_queued_ms !== undefined ? ` · oldest queued ${stats.oldest_queued_ms} ms` : "");
  }
  tr.append(orders);
  const action = v.paused ? "resume" : "pause";
  const button = el("button", { type: "button", class: "toggle" }, action);
  button.addEventListener("click", () => toggle(v.id, action));
  tr.append(el("td", { class: "admin-only" }, button));
  return tr;
}

async function toggle(id, action) {
  const res = await fetch(`/api/v1/vouchers/${id}/${action}`, {
    method: "POST", headers: { Authorization: "Bearer " + token() } });
  if (!res.ok) setStatus(`${action} ${id}: HTTP ${res.status}`, true);
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
    m = line.match(/^(seckill_fulfilment_lag_seconds|seckill_queue_pending) (\S+)$/);
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
  const pending = gauges.seckill_queue_pending;
  document.getElementById("pending").textContent = pending === undefined ? "–" : String(pending);
}

async function refresh() {
  const admin = token() !== "";
  document.body.classList.toggle("is-admin", admin);
  let list;
  try {
    list = await getJSON("/api/v1/vouchers", false);
  } catch (e) {
    setStatus("cannot read vouchers: " + e.message, true);
    return;
  }
  const vouchers = list.vouchers || [];
  const stats = {};
  if (admin) {
    await Promise.all(vouchers.slice(0, MAX_STATS).map(async (v) => {
      try { stats[v.id] = await getJSON(`/api/v1/vouchers/${v.id}/stats`, true); }
      catch (e) { document.getElementById("admin-note").textContent = e.message; }
    }));
    refreshMetrics().catch((e) => { document.getElementById("admin-note").textContent = e.message; });
  }
  document.querySelector("#vouchers tbody").replaceChildren(...vouchers.map((v) => row(v, stats[v.id])));
  document.getElementById("empty").hidden = vouchers.length > 0;
  const now = serverNow();
  setStatus(now === null ? "updated (server clock not read yet)" : "updated " + new Date(now).toLocaleTimeString() + " server time");
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = document.getElementById("token");
  if (input.value.trim()) sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  input.value = "";
  document.getElementById("admin-note").textContent = "";
  previous = null;
  refresh();
});
document.getElementById("forget").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  refresh();
});

// The clock first (the first list is then judged by it), measured again every minute.
measureClock().catch(() => {}).finally(() => { refresh(); setInterval(refresh, 1000); });
setInterval(() => measureClock().catch(() => {}), 60000);

// The live sale page: plain JavaScript, no build step. It reads the public voucher
// list every second; with an admin token (kept in this tab's sessionStorage) it also
// reads each voucher's stats and the Prometheus metrics, and offers pause/resume.
"use strict";

const TOKEN_KEY = "seckill.adminToken";
const OUTCOMES = ["reserved", "sold_out", "already_purchased", "not_started", "ended", "paused",
  "rate_limited", "unavailable", "invalid", "not_found", "unauthorized"];
const MAX_STATS = 20; // vouchers whose stats are read each second

let previous = null; // last metrics sample: {at, counts}

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

function saleState(v, now) {
  if (v.paused) return ["paused", "paused"];
  if (now < Date.parse(v.begins_at)) return ["upcoming", ""];
  if (now >= Date.parse(v.ends_at)) return ["ended", ""];
  return ["live", "live"];
}

function row(v, stats) {
  const sold = v.stock > 0 ? (v.stock - v.remaining) / v.stock : 0;
  const [state, cls] = saleState(v, Date.now());
  const tr = el("tr", { "data-voucher-id": v.id },
    el("td", {}, v.id),
    el("td", { class: "title" }, v.title),
    el("td", {}, el("span", { class: "badge " + cls }, state)),
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
  setStatus("updated " + new Date().toLocaleTimeString());
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

refresh();
setInterval(refresh, 1000);

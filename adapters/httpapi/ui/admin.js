// The admin's page: each sale's units by state (its stats), the instance's figures
// from /metrics, and the actions on a sale (pause or resume, edit, end now).

import { bearer, getJSON, patchVoucher, refusal } from "./api.js";
import { refresh } from "./app.js";
import { serverNow } from "./clock.js";
import { button, el, note } from "./dom.js";
import { showVoucher } from "./render.js";
import { MAX_STATS, S } from "./state.js";

const COUNTS = [["remaining", "on sale"], ["queued", "queued"], ["awaiting_payment", "awaiting payment"],
  ["paid", "paid"], ["cancelled", "cancelled"], ["expired", "expired"], ["failed", "failed"]];
// The grab outcomes in the order the rates list them; one the metrics add later follows.
const OUTCOMES = ["reserved", "sold_out", "already_purchased", "not_started", "ended", "paused",
  "rate_limited", "unavailable", "invalid", "not_found", "unauthorized", "denied", "queue_required", "challenge_required"];

let previous = null; // last metrics sample: {at, counts}
const statsErrors = {}; // voucher id → why its stats were not read

// readStats reads the stats of the first MAX_STATS vouchers of list: each answer, and
// the server's time it came.
export async function readStats(list) {
  const fresh = {}, at = {};
  await Promise.all(list.slice(0, MAX_STATS).map(async (v) => {
    try {
      fresh[v.id] = await getJSON(`/api/v1/vouchers/${v.id}/stats`, true);
      at[v.id] = serverNow();
      delete statsErrors[v.id];
    } catch (e) {
      statsErrors[v.id] = e.message;
    }
  }));
  return [fresh, at];
}

// counts lays a voucher's stats out as a table, one column per state of its units,
// all of one moment: the stats' time is told, since the row's "left to grab" moves
// on with every event while this stays as read (mid-burst they differ by the grabs
// of the time between).
export function counts(v) {
  const st = S.stats[v.id];
  if (!st) return el("p", { class: "muted" }, statsErrors[v.id] ? "stats not read: " + statsErrors[v.id] : "stats not read yet");
  const head = el("tr", {}), body = el("tr", {});
  for (const [key, label] of COUNTS) {
    head.append(el("th", { scope: "col", class: "num" }, label));
    body.append(el("td", { class: "num", "data-count": key }, String(st[key])));
  }
  const at = S.statsAt[v.id];
  const when = at ? new Date(at).toLocaleTimeString() : "?";
  return el("div", {},
    el("p", { class: "muted small", "data-stats-at": "" },
      `Units by state at ${when} (server time), all of one moment: on sale + queued + awaiting payment + paid = stock`),
    el("table", { class: "counts", "aria-label": `units of voucher ${v.id} by state` }, el("thead", {}, head), el("tbody", {}, body)),
    el("p", { class: "muted small" }, `stock ${st.stock} · queue entries not yet acknowledged ${st.pending}` +
      (st.oldest_queued_ms !== undefined ? ` · oldest queued ${st.oldest_queued_ms} ms` : "") + " · on the waitlist ",
      el("span", { "data-waitlist": "" }, String(st.waitlist ?? 0))));
}

// actions are an admin's buttons for a sale in state.
export function actions(v, state) {
  const toggleAction = v.paused ? "resume" : "pause";
  return el("td", { class: "actions" },
    button("toggle", toggleAction, () => toggle(v.id, toggleAction)),
    button("edit", "edit", () => openEdit(v)),
    button("end-now", "end now", () => endNow(v), state === "ended" || state === "upcoming"));
}

// parseMetrics reads the samples this page needs from the Prometheus text format.
function parseMetrics(text) {
  const totals = {}, gauges = {};
  for (const line of text.split("\n")) {
    let m = line.match(/^seckill_grab_requests_total\{outcome="([a-z_]+)"\} (\S+)$/);
    if (m) { totals[m[1]] = Number(m[2]); continue; }
    m = line.match(/^(seckill_fulfilment_lag_seconds|seckill_queue_pending|seckill_streams_open|seckill_webhook_backlog) (\S+)$/);
    if (m) gauges[m[1]] = Number(m[2]);
  }
  return { totals, gauges };
}

// refreshMetrics reads /metrics and shows, once for the whole instance above the
// list, the fulfillment lag and the backlogs, and the grab answers per second since
// the last read: only the outcomes that came (a list of fourteen rates nearly all zero
// hides the one that matters), with the totals since the instance started beside.
export async function refreshMetrics() {
  const res = await fetch("/metrics", { cache: "no-store" });
  if (!res.ok) {
    document.getElementById("admin-note").textContent =
      "Metrics are not served on this listener (SECKILL_METRICS_ADDR): no rates here.";
    return;
  }
  const { totals, gauges } = parseMetrics(await res.text());
  const at = performance.now();
  const outcomes = [...OUTCOMES, ...Object.keys(totals).filter((o) => !OUTCOMES.includes(o))];
  const rates = [];
  if (previous && at > previous.at) {
    for (const o of outcomes) {
      if (totals[o] === undefined || previous.totals[o] === undefined) continue;
      const rate = (totals[o] - previous.totals[o]) / ((at - previous.at) / 1000);
      if (rate > 0) rates.push(el("span", { class: "rate", "data-outcome": o }, `${o} ${rate.toFixed(1)}/s`));
    }
  }
  document.getElementById("rates").replaceChildren(...(rates.length ? rates
    : [el("span", { class: "muted" }, previous ? "no grabs since the last read" : "measuring…")]));
  const seen = outcomes.filter((o) => totals[o] > 0);
  document.getElementById("rate-totals").replaceChildren(...(seen.length ? seen.flatMap((o, i) =>
    [i ? " · " : "", el("span", { "data-outcome": o }, `${o} ${totals[o]}`)]) : ["none yet"]));
  previous = { at, totals };
  const lag = gauges.seckill_fulfilment_lag_seconds;
  document.getElementById("lag").textContent = lag === undefined ? "–" : lag.toFixed(2) + " s";
  for (const [id, name] of [["pending", "seckill_queue_pending"], ["streams", "seckill_streams_open"],
    ["webhook-backlog", "seckill_webhook_backlog"]]) {
    document.getElementById(id).textContent = gauges[name] === undefined ? "–" : String(gauges[name]);
  }
}

// forgetAdmin drops what the page read as an admin (at sign-out, or a new token).
export function forgetAdmin() {
  previous = null;
  S.stats = {};
  S.statsAt = {};
  S.queues = {};
  S.editing = null;
  document.getElementById("edit").hidden = true;
}

async function toggle(id, action) {
  try {
    const res = await fetch(`/api/v1/vouchers/${id}/${action}`, { method: "POST", headers: bearer() });
    if (!res.ok) throw await refusal(res);
    showVoucher(await res.json());
    note(`voucher ${id}: ${action}d`);
  } catch (e) {
    note(`${action} ${id}: ${e.message}`, true);
  }
  refresh();
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
  S.editing = v.id;
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

// submitEdit sends the edit form's changes to the voucher it edits.
export async function submitEdit(ev) {
  ev.preventDefault();
  const form = ev.target, result = document.getElementById("edit-result");
  const edit = editOf(form);
  result.classList.remove("error");
  if (Object.keys(edit).length === 0) { result.textContent = "Nothing to change."; return; }
  try {
    const v = await patchVoucher(S.editing, edit);
    showVoucher(v);
    form.reset();
    result.textContent = `Saved: ${v.remaining} of ${v.stock} left, limit ${v.per_user_limit}, ${v.state}.`;
  } catch (e) {
    result.textContent = (e.refused ? "Refused: " : "No answer (send it again: it is done once): ") + e.message;
    result.classList.add("error");
  }
  refresh();
}

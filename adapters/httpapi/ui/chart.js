// Each sale's last minutes, from samples the page takes itself: units left and grabs
// per second, drawn as inline SVG.

import { el, svg } from "./dom.js";

const WINDOW_MS = 5 * 60 * 1000; // what the charts show, and all the samples kept
const RATE_SPAN_MS = 5000; // grabs per second are averaged over this much
const series = new Map(); // voucher id → samples [{at (performance.now()), left, taken}], oldest first

// sample notes each listed voucher's units left and units taken (stock − remaining,
// which an edit of the stock leaves alone) and forgets what is older than the window
// or no longer listed. The samples are half a second apart at least: one taken sooner
// (events come up to ten a second, and an action's answer between two reads) updates
// the last one's figures and keeps its time, and the first is never updated, so a
// series always starts from what the page saw first.
export function sample(list) {
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
export function chart(v) {
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

// Where a waiting room's queue and a draw stand, told under the voucher's title to
// anyone: a room's window and, once the sale began, its shuffle (how many joined
// before the start, the seed); to an admin, the room's figures too (joined, admitted,
// waiting, passes outstanding); a draw's entrants, its seed and its winners (a drop's
// vouchers share their campaign's one draw).

import { getJSON } from "./api.js";
import { until, serverNow } from "./clock.js";
import { el } from "./dom.js";
import { MAX_STATS, S } from "./state.js";

// roomOf names the waiting room that admits to v: a drop's vouchers share their
// campaign's one room (key "c<campaign id>", …/campaigns/{id}/queue), any other
// voucher has its own (key its id). The page keeps each room's place, figures and
// shuffle under its key.
export function roomOf(v) {
  if (v.campaign_id) return { key: "c" + v.campaign_id, path: `/api/v1/campaigns/${v.campaign_id}` };
  return { key: v.id, path: `/api/v1/vouchers/${v.id}` };
}

// rooms returns the waiting rooms of list's vouchers that keep, one per room, at most
// MAX_STATS of them: [room, a voucher it admits to].
export function rooms(list, keep) {
  const seen = new Map();
  for (const v of list) {
    if (v.admission !== "waiting_room" || !keep(v)) continue;
    const r = roomOf(v);
    if (!seen.has(r.key)) seen.set(r.key, [r, v]);
  }
  return [...seen.values()].slice(0, MAX_STATS);
}

// readShuffles counts, once for each waiting room of list that began, the entrants
// of its shuffle (GET …/queue/entrants: public, one id a line; it never changes once
// published). A room not shuffled yet (404) is asked again at the next read.
export async function readShuffles(list) {
  const now = serverNow();
  await Promise.all(rooms(list, (v) => !(roomOf(v).key in S.shuffled) && now !== null && now >= Date.parse(v.begins_at))
    .map(async ([r]) => {
      const res = await fetch(`${r.path}/queue/entrants`).catch(() => null);
      if (res && res.ok) S.shuffled[r.key] = (await res.text()).split("\n").filter((line) => line !== "").length;
    }));
}

// readQueueStats reads, for an admin, the figures of each waiting room among the
// first MAX_STATS vouchers of list (GET …/queue/stats); a room whose figures could not
// be read keeps the last ones read.
export async function readQueueStats(list) {
  const fresh = {};
  await Promise.all(rooms(list.slice(0, MAX_STATS), () => true).map(async ([r]) => {
    try {
      fresh[r.key] = await getJSON(`${r.path}/queue/stats`, true);
    } catch {
      if (r.key in S.queues) fresh[r.key] = S.queues[r.key];
    }
  }));
  return fresh;
}

// known is the first of values neither null nor undefined (undefined when none is).
function known(...values) {
  return values.find((x) => x !== null && x !== undefined);
}

// short is the first hex digits of a hash or seed, the whole in its title.
function short(hex) {
  return el("code", { title: hex }, hex.slice(0, 12) + "…");
}

// roomState says where v's waiting room (its drop's, for a campaign's voucher) stands: its window (passes outstanding at
// most), when its queue opens, and, once the sale began, how many joined before the
// start (shuffled) and the seed — from the token's user's place (GET …/queue) or the
// admin's figures (GET …/queue/stats), the count else from the shuffle's entrants —
// and, to an admin, the room's figures of the last read.
export function roomState(v) {
  if (v.admission !== "waiting_room") return "";
  const now = serverNow();
  const r = roomOf(v);
  const parts = [(v.campaign_id ? "the drop's waiting room" : "waiting room") + ` · window ${v.queue_window} passes`];
  const opens = v.queue_opens_at ? Date.parse(v.queue_opens_at) : null;
  if (now !== null && opens !== null && now < opens) parts.push(`queue opens ${until(opens, now)}`);
  const place = S.places[r.key], q = S.queues[r.key];
  const entrants = known(place && place.entrants, q && q.entrants, S.shuffled[r.key]);
  const seed = known(place && place.seed, q && q.seed);
  const out = el("div", { class: "muted small", "data-room": v.id });
  if (entrants === undefined) {
    out.append(parts.join(" · ") + " · commitment ", short(v.commitment || ""));
  } else {
    parts.push(el("span", { "data-room-entrants": "" }, `${entrants} joined before the start, shuffled`));
    out.append(...parts.flatMap((p, i) => [i ? " · " : "", p]));
    if (seed) out.append(" · seed ", el("span", { "data-room-seed": "" }, short(seed)));
  }
  if (q) out.append(queueFigures(q));
  return out;
}

// queueFigures lays out an admin's figures of a waiting room (GET …/queue/stats).
function queueFigures(q) {
  const figure = (key) => el("span", { "data-queue": key }, String(q[key]));
  return el("div", { "data-queue-figures": "" },
    "joined ", figure("joined"), ` (${q.joined_early} before the start, ${q.joined_late} after) · admitted `,
    figure("admitted"), " · waiting ", figure("waiting"), " · passes outstanding ", figure("passes_outstanding"),
    ` of ${q.window}`);
}

// drawLine lays out where draw d (a GET …/draw answer) stands, led by label when
// given: its entrants so far, or, once drawn, when, by which seed (its first hex
// digits; the whole is in GET …/draw) and how many won. Its data-draw says which.
export function drawLine(d, label = "") {
  const lead = label ? label + " · " : "";
  if (!d.seed) return el("div", { class: "muted small", "data-draw": "entries" }, `${lead || "draw: "}${d.entrants} entered`);
  return el("div", { class: "muted small", "data-draw": "drawn" },
    `${lead}drawn ${new Date(d.drawn_at).toLocaleTimeString()} · ${d.entrants} entered · ${d.winners.length} won · seed `,
    short(d.seed));
}

// drawState says where a draw voucher's draw stands (drawLine): its own, or, for a
// drop's voucher, its drop's one draw, which hands out every voucher of the drop.
// Nothing for a voucher of another mode.
export function drawState(v) {
  if (v.admission !== "draw") return "";
  if (!v.campaign_id) return S.draws[v.id] ? drawLine(S.draws[v.id]) : "";
  const d = S.dropDraws[v.campaign_id];
  return d ? drawLine(d, "the drop's draw") : el("div", { class: "muted small", "data-draw": "drop" }, "the drop's draw");
}

// readDraws reads the draw of each draw voucher of list outside a drop (anyone may); a
// drop's vouchers are drawn in their campaign's draw (readDropDraws).
export async function readDraws(list) {
  const fresh = {};
  await Promise.all(list.filter((v) => v.admission === "draw" && !v.campaign_id).slice(0, MAX_STATS).map(async (v) => {
    const res = await fetch(`/api/v1/vouchers/${v.id}/draw`, { cache: "no-store" }).catch(() => null);
    if (res && res.ok) fresh[v.id] = await res.json();
  }));
  return fresh;
}

// readDropDraws reads the one draw of each drop of campaigns sold by a draw (anyone
// may): campaign id → its GET …/campaigns/{id}/draw answer.
export async function readDropDraws(campaigns) {
  const fresh = {};
  await Promise.all(campaigns.filter((c) => c.admission === "draw").slice(0, MAX_STATS).map(async (c) => {
    const res = await fetch(`/api/v1/campaigns/${c.id}/draw`, { cache: "no-store" }).catch(() => null);
    if (res && res.ok) fresh[c.id] = await res.json();
  }));
  return fresh;
}

// The shopper's page: a grab of each live sale as the token's user — in a waiting
// room, a join of its queue, its place as it moves, then the grab with its pass; in a
// drop sold by one draw, an entry choosing a voucher while entries are open — and the
// user's newest orders.

import { bearer, getJSON, refusal } from "./api.js";
import { refresh } from "./app.js";
import { duration, serverNow, until } from "./clock.js";
import { button, el, note } from "./dom.js";
import { proofFor, solve } from "./pow.js";
import { render } from "./render.js";
import { roomOf, rooms } from "./room.js";
import { S } from "./state.js";

// grabCell is what the token's user may do with v, a sale in state.
export function grabCell(v, state) {
  if (v.admission === "waiting_room") return roomCell(v, state);
  if (v.admission === "draw" && v.campaign_id && state === "upcoming") return entryCell(v);
  return button("grab", v.challenge === "pow" ? "grab (proof of work)" : "grab", () => grab(v), state !== "live" || S.grabbing.has(v.id));
}

// roomCell is what the token's user does in a waiting room: join its queue, then
// follow its place (position, how many are ahead, the estimated wait) until it is let
// in, then grab with its pass. A drop's vouchers share their campaign's room: one
// join, one place, and the pass grabs one of them.
function roomCell(v, state) {
  const p = S.places[roomOf(v).key];
  if (p === undefined || p === null) {
    return button("join", v.challenge === "pow" ? "join the queue (proof of work)" : "join the queue", () => joinQueue(v),
      state === "ended" || S.grabbing.has(v.id));
  }
  if (p.admitted && p.pass) return button("grab", "grab with your pass", () => grab(v), state !== "live" || S.grabbing.has(v.id));
  let text = p.position === null ? "in the queue: shuffled at the start" : `position ${p.position}, ${p.ahead} ahead`;
  if (p.sold_out) text = p.admitted ? "let in; sold out" : "sold out before your turn";
  else if (p.admitted) text = "let in; your pass was used or expired";
  else if (p.estimated_wait_seconds !== null && p.estimated_wait_seconds !== undefined) text += `, about ${duration(p.estimated_wait_seconds * 1000)}`;
  return el("span", { class: "muted small", "data-place": p.admitted ? "admitted" : "waiting" }, text);
}

// entryCell is what the token's user does in a drop's draw before the sale begins:
// once its entries open, enter it choosing v, or, entered, choose v instead (the
// latest choice stands); the choice made from this page is marked on its row. From
// the start the drop's vouchers are grabbed as any (the draw's winners hold orders).
function entryCell(v) {
  const now = serverNow();
  const c = S.campaigns.find((c) => c.id === v.campaign_id);
  const at = (c && c.entries_open_at) || v.entries_open_at;
  const opens = at ? Date.parse(at) : null;
  if (opens !== null && now !== null && now < opens) return el("span", { class: "muted small" }, `entries open ${until(opens, now)}`);
  const chosen = S.entered[v.campaign_id];
  if (chosen === v.id) return button("enter", "entered: your choice", () => enterDraw(v), true);
  return button("enter", chosen ? "choose this instead" : "enter the draw", () => enterDraw(v), S.grabbing.has(v.id));
}

// readPlaces reads the token's user's place in each waiting room of list not ended:
// null where the user is not in the queue, the last place where it could not be read.
export async function readPlaces(list) {
  const fresh = {};
  await Promise.all(rooms(list, (v) => v.state !== "ended").map(async ([r]) => {
    const res = await fetch(`${r.path}/queue`, { headers: bearer(), cache: "no-store" }).catch(() => null);
    if (res && res.ok) fresh[r.key] = await res.json();
    else if (res && res.status === 404) fresh[r.key] = null;
    else if (r.key in S.places) fresh[r.key] = S.places[r.key];
  }));
  return fresh;
}

// readOrders reads the token's user's newest orders (the first page).
export async function readOrders() {
  return (await getJSON("/api/v1/orders", true)).orders || [];
}

// showOrders lists the token's user's newest orders, each with its voucher, status
// and, while unpaid, its deadline by the server's clock.
export function showOrders() {
  const tbody = document.querySelector("#orders tbody");
  const orders = S.orders || [];
  const now = serverNow();
  tbody.replaceChildren(...orders.map((o) => {
    const v = S.vouchers.find((w) => w.id === o.voucher_id);
    const deadline = o.expires_at && now !== null ? "pay by " + new Date(Date.parse(o.expires_at)).toLocaleTimeString() +
      " (" + until(Date.parse(o.expires_at), now) + ")" : "";
    return el("tr", { "data-order-id": o.order_id },
      el("td", {}, el("code", {}, o.order_id)),
      el("td", {}, v ? `${v.title} (${o.voucher_id})` : o.voucher_id),
      el("td", { class: "num" }, String(o.quantity)),
      el("td", { class: "status" }, el("span", { class: "badge " + o.status }, o.status)),
      el("td", { class: "muted small" }, deadline));
  }));
  document.getElementById("no-orders").hidden = S.orders === null || orders.length > 0;
}

// grab takes a unit of v for the token's user, with its pass (X-Seckill-Pass) in a
// waiting room. A sale with a challenge is grabbed with a proof (X-Seckill-Pow): the
// page fetches a challenge and solves it first; a refusal for want of one (the proof
// expired, or was spent) carries a fresh challenge, which the page solves and sends
// once more.
async function grab(v) {
  S.grabbing.add(v.id);
  render();
  const place = v.admission === "waiting_room" ? S.places[roomOf(v).key] : null;
  const pass = place ? place.pass : null;
  const send = (proof) => fetch(`/api/v1/vouchers/${v.id}/grab`, { method: "POST",
    headers: bearer(Object.assign({}, proof ? { "X-Seckill-Pow": proof } : {}, pass ? { "X-Seckill-Pass": pass } : {})) });
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
    S.grabbing.delete(v.id);
  }
  refresh();
}

// enterDraw enters the token's user in v's drop's draw choosing v (entering again
// changes the choice), with a proof of the campaign's challenge when it asks for one.
async function enterDraw(v) {
  const path = `/api/v1/campaigns/${v.campaign_id}`;
  S.grabbing.add(v.id);
  render();
  try {
    const proof = await proofFor(v, path);
    const res = await fetch(`${path}/entries`, { method: "POST", body: JSON.stringify({ voucher_id: v.id }),
      headers: bearer(Object.assign({ "Content-Type": "application/json" }, proof ? { "X-Seckill-Pow": proof } : {})) });
    if (!res.ok) throw await refusal(res);
    const entry = await res.json();
    S.entered[v.campaign_id] = v.id;
    note(`drop ${v.campaign_id}: entered, choosing ${v.title} (${entry.entrants} entered so far)`);
  } catch (e) {
    note(`enter ${v.id}: ${e.message}`, true);
  } finally {
    S.grabbing.delete(v.id);
  }
  refresh();
}

// joinQueue puts the token's user in v's waiting room (its drop's, for a campaign's
// voucher: a proof of work there is of the campaign's challenge).
async function joinQueue(v) {
  const r = roomOf(v);
  S.grabbing.add(v.id);
  render();
  try {
    const proof = await proofFor(v, r.path);
    const res = await fetch(`${r.path}/queue`, { method: "POST",
      headers: bearer(proof ? { "X-Seckill-Pow": proof } : {}) });
    if (!res.ok) throw await refusal(res);
    S.places[r.key] = await res.json();
    note(v.campaign_id ? `drop ${v.campaign_id}: in the queue` : `voucher ${v.id}: in the queue`);
  } catch (e) {
    note(`join ${v.id}: ${e.message}`, true);
  } finally {
    S.grabbing.delete(v.id);
  }
  refresh();
}

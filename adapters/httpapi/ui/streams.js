// The sales' event streams (GET /api/v1/vouchers/{id}/events): each open sale's
// remaining units and state as they change, so the list is read only to find new
// sales.

import { sample } from "./chart.js";
import { saleState, serverNow } from "./clock.js";
import { render } from "./render.js";
import { S } from "./state.js";

// Streams followed at once: a browser holds at most 6 HTTP/1.1 connections to a host,
// and each stream keeps one; the rest stay free for the page's reads and actions.
const MAX_FOLLOWED = 4;

const followed = new Map(); // voucher id → its EventSource
const live = new Set(); // voucher ids whose stream delivered an event since it last failed
const reopenAt = new Map(); // voucher id → performance.now() before which its stream, closed for good, is not opened again
let wanted = new Set(); // voucher ids whose stream the page wants

// follow opens the event stream of each open sale listed (not ended), up to
// MAX_FOLLOWED, and closes the streams of sales ended or no longer listed. It answers
// whether every open sale can be followed (else the list is read every second for
// them, as it is while a stream is down: see streamsLive).
export function follow(list) {
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
export function streamsLive() {
  for (const id of wanted) if (!live.has(id)) return false;
  return true;
}

// showFollowed marks the page with the streams that deliver and whether it polls.
export function showFollowed() {
  document.body.dataset.followed = String(wanted.size - streamsDown());
  document.body.dataset.polling = S.allFollowed && streamsLive() ? "0" : "1";
}

// onVoucherEvent shows a voucher as its stream sent it, and samples it for its chart.
function onVoucherEvent(v) {
  S.events++;
  S.eventSeen[v.id] = S.events;
  document.body.dataset.events = String(S.events);
  if (!S.vouchers.some((w) => w.id === v.id)) return;
  S.vouchers = S.vouchers.map((w) => (w.id === v.id ? v : w));
  sample(S.vouchers);
  render();
}

// streamsDown counts the streams the page wants that do not deliver.
export function streamsDown() {
  let n = 0;
  for (const id of wanted) if (!live.has(id)) n++;
  return n;
}

// The live sale page: plain JavaScript modules, no build step. It follows each open
// sale's event stream (streams.js: its remaining units and state as they change) and
// reads the public voucher list only to find new sales — every 10 s, or every second
// while a sale is open that no live stream follows. It tells time by the server's
// clock, never this device's (clock.js).
//
// What it shows beyond the sales depends on the token pasted (kept in this tab's
// sessionStorage) and the role it names (api.js: the JWT's role claim). An admin's
// page (admin.js) reads each voucher's stats (a waiting room's figures too, room.js)
// and the Prometheus metrics every second, draws each sale's last minutes from
// samples it takes itself (chart.js), and offers pause/resume, edit and end now. A shopper's page (shopper.js) offers a grab of each
// live sale as the token's user — in a waiting room, a join of its queue, its place
// as it moves, then the grab with its pass; with a proof of work solved by the page
// when the sale asks for one (pow.js) — and lists the user's newest orders. Anyone
// sees where a waiting room's queue and a draw stand (room.js), and the drops: each
// campaign's units left under its cap, its vouchers and, for a drop sold by one draw,
// where the draw stands (drops.js); a shopper enters a drop's draw from the row of the
// voucher it chooses.

import { forgetAdmin, readStats, refreshMetrics, submitEdit } from "./admin.js";
import { getJSON, keepToken, role } from "./api.js";
import { sample } from "./chart.js";
import { measureClock, serverNow } from "./clock.js";
import { note, setStatus } from "./dom.js";
import { readCampaigns } from "./drops.js";
import { render } from "./render.js";
import { readDraws, readDropDraws, readQueueStats, readShuffles } from "./room.js";
import { readOrders, readPlaces } from "./shopper.js";
import { S } from "./state.js";
import { follow, showFollowed, streamsDown, streamsLive } from "./streams.js";

const LIST_EVERY_MS = 10000; // the list's reads while every open sale is followed

// refused notes why the server refused the token (an answer 401), or that it no
// longer does (e null).
function refused(e) {
  if (e && e.status === 401) S.refused = e.message;
  else if (!e) S.refused = "";
}

// load reads the list, and what the token's role shows beside it.
async function load() {
  const seen = S.answers, since = S.events;
  S.listReadAt = performance.now();
  let list;
  try {
    list = await getJSON("/api/v1/vouchers", false);
  } catch (e) {
    setStatus("cannot read vouchers: " + e.message, true);
    return;
  }
  // A voucher whose stream told more since this read began keeps what it told.
  const read = (list.vouchers || []).map((v) => {
    const shown = S.vouchers.find((w) => w.id === v.id);
    return shown && (S.eventSeen[v.id] || 0) > since ? shown : v;
  });
  sample(read);
  const who = role();
  const [draws, , [campaigns, dropDraws]] = await Promise.all([readDraws(read), readShuffles(read),
    readCampaigns().then(async (cs) => [cs, await readDropDraws(cs)])]);
  let places = {}, orders = S.orders, stats = S.stats, statsAt = S.statsAt, queues = S.queues;
  if (who === "user") {
    [places, orders] = await Promise.all([readPlaces(read),
      readOrders().then((o) => { refused(null); return o; }, (e) => { refused(e); return S.orders; })]);
  } else if (who === "admin") {
    [[stats, statsAt], queues] = await Promise.all([readStats(read), readQueueStats(read)]);
    refreshMetrics().catch((e) => { document.getElementById("admin-note").textContent = e.message; });
  }
  if (seen !== S.answers || who !== role()) return; // read before an action's answer, or for another token
  Object.assign(S, { vouchers: read, stats, statsAt, queues, draws, dropDraws, places, orders, campaigns });
  S.allFollowed = follow(read);
  showFollowed();
  render();
  const now = serverNow();
  const down = streamsDown();
  setStatus((now === null ? "updated (server clock not read yet)" : "updated " + new Date(now).toLocaleTimeString() + " server time") +
    (down > 0 ? ` · ${down} live stream${down > 1 ? "s" : ""} down: reading every second` : ""));
}

// refresh reads the page's data again; one read at a time, and one more after it when
// asked meanwhile (an action's answer must not be overwritten by an older read).
let loading = null, again = false;
export function refresh() {
  if (loading) { again = true; return; }
  loading = load().finally(() => {
    loading = null;
    if (again) { again = false; refresh(); }
  });
}

// forget drops what the page read for the token it kept.
function forget() {
  forgetAdmin();
  S.places = {};
  S.entered = {};
  S.orders = null;
  S.refused = "";
  document.getElementById("admin-note").textContent = "";
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = document.getElementById("token");
  if (input.value.trim()) keepToken(input.value.trim());
  input.value = "";
  forget();
  render();
  refresh();
});
document.getElementById("sign-out").addEventListener("click", () => {
  keepToken("");
  forget();
  note("");
  render();
});
document.getElementById("edit-form").addEventListener("submit", submitEdit);
document.getElementById("edit-close").addEventListener("click", () => { document.getElementById("edit").hidden = true; });

// tick runs every second: with a token, the reads of its role (and the list's); without
// one, the list's when it is due (every second while a sale is not followed by a live
// stream); otherwise the page only samples what its streams told and draws it again
// (the countdowns, the charts' time running on).
function tick() {
  if (role() !== "" || !S.allFollowed || !streamsLive() || performance.now() - S.listReadAt >= LIST_EVERY_MS) {
    refresh();
    return;
  }
  sample(S.vouchers);
  render();
}

// The clock first (the first list is then judged by it), measured again every minute.
measureClock().catch(() => {}).finally(() => { refresh(); setInterval(tick, 1000); });
setInterval(() => measureClock().catch(() => {}), 60000);

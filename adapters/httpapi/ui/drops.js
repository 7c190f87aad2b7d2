// The drops: each campaign on sale, read with the list (GET /api/v1/campaigns, public),
// with the units its cap has left, its limit per person, and its vouchers (sizes,
// tiers) as the list shows them; a drop sold by one draw, where its draw stands. A
// voucher of a drop says so in the list, and a grab the drop's cap refused reads
// "campaign_sold_out" in the action note.

import { getJSON } from "./api.js";
import { saleState, serverNow, until } from "./clock.js";
import { el } from "./dom.js";
import { drawLine } from "./room.js";
import { S } from "./state.js";

// readCampaigns reads the newest page of campaigns; a failure keeps what was read.
export async function readCampaigns() {
  try {
    return (await getJSON("/api/v1/campaigns", false)).campaigns || [];
  } catch {
    return S.campaigns;
  }
}

// dropOf names the drop voucher v belongs to, for its row in the list ("" for none).
export function dropOf(v) {
  if (!v.campaign_id) return "";
  const c = S.campaigns.find((c) => c.id === v.campaign_id);
  return el("span", { class: "muted small drop-of", "data-campaign-id": v.campaign_id }, " · drop " + (c ? c.title : v.campaign_id));
}

// admission says how a campaign's buyers are let in when it is not first come: one
// waiting room, or one draw and where it stands (when its entries open, its entrants
// so far, once drawn its winners and seed); nothing for first come.
function admission(c, now) {
  if (c.admission === "waiting_room") return [el("span", { class: "muted small", "data-drop-room": c.id }, " · one waiting room")];
  if (c.admission !== "draw") return [];
  const mark = el("span", { class: "muted small", "data-drop-draw": c.id }, " · one draw");
  const opens = c.entries_open_at ? Date.parse(c.entries_open_at) : null;
  if (now !== null && opens !== null && now < opens) return [mark, el("div", { class: "muted small" }, `entries open ${until(opens, now)}`)];
  const d = S.dropDraws[c.id];
  return d ? [mark, drawLine(d)] : [mark];
}

// row is one campaign's row: its state (and whether one waiting room or one draw
// admits to it), the units left under its cap (or across its vouchers without one),
// the cap, the limit per person and its vouchers' titles.
function row(c) {
  const now = serverNow();
  const [state, countdown] = saleState(c, now);
  const titles = c.vouchers.map((id) => {
    const v = S.vouchers.find((v) => v.id === id);
    return v ? `${v.title} (${v.remaining})` : id;
  });
  return el("tr", { "data-campaign-id": c.id },
    el("td", {}, c.id),
    el("td", { class: "title" }, c.title, ...admission(c, now)),
    el("td", {}, el("span", { class: "badge " + state }, state), " ", el("span", { class: "countdown muted" }, countdown)),
    el("td", { class: "num remaining" }, String(c.remaining)),
    el("td", { class: "num cap" }, c.cap === null ? "—" : String(c.cap)),
    el("td", { class: "num limit" }, String(c.per_user_limit)),
    el("td", { class: "variants small" }, titles.join(", ")));
}

// renderCampaigns draws the drops, or hides their section while there are none.
export function renderCampaigns() {
  document.getElementById("drops").hidden = S.campaigns.length === 0;
  document.querySelector("#campaigns tbody").replaceChildren(...S.campaigns.map(row));
}

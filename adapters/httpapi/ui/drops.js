// The drops: each campaign on sale, read with the list (GET /api/v1/campaigns, public),
// with the units its cap has left, its limit per person, and its vouchers (sizes,
// tiers) as the list shows them. A voucher of a drop says so in the list, and a grab
// the drop's cap refused reads "campaign_sold_out" in the action note.

import { getJSON } from "./api.js";
import { saleState, serverNow } from "./clock.js";
import { el } from "./dom.js";
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

// row is one campaign's row: its state (and whether one waiting room admits to it),
// the units left under its cap (or across its vouchers without one), the cap, the
// limit per person and its vouchers' titles.
function row(c) {
  const [state, countdown] = saleState(c, serverNow());
  const titles = c.vouchers.map((id) => {
    const v = S.vouchers.find((v) => v.id === id);
    return v ? `${v.title} (${v.remaining})` : id;
  });
  return el("tr", { "data-campaign-id": c.id },
    el("td", {}, c.id),
    el("td", { class: "title" }, c.title,
      c.admission === "waiting_room" ? el("span", { class: "muted small", "data-drop-room": c.id }, " · one waiting room") : ""),
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

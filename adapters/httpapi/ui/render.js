// The list of sales as the page last knew it, drawn for whoever's token is kept: an
// admin gets each sale's actions and, under it, its units by state and its chart; a
// shopper its grab (or queue, or a drop's draw entry) and its orders; no token, the
// sales only.

import { actions, counts } from "./admin.js";
import { claims, role } from "./api.js";
import { chart } from "./chart.js";
import { saleState, serverNow } from "./clock.js";
import { el } from "./dom.js";
import { dropOf, renderCampaigns } from "./drops.js";
import { drawState, roomState } from "./room.js";
import { grabCell, showOrders } from "./shopper.js";
import { S } from "./state.js";

// rows are a voucher's row and, for admins, its detail row: the counts and the chart.
function rows(v, who) {
  const sold = v.stock > 0 ? (v.stock - v.remaining) / v.stock : 0;
  const [state, countdown] = saleState(v, serverNow());
  const tr = el("tr", { "data-voucher-id": v.id },
    el("td", {}, v.id),
    el("td", { class: "title" }, v.title, dropOf(v), drawState(v), roomState(v)),
    el("td", {}, el("span", { class: "badge " + state }, state), " ", el("span", { class: "countdown muted" }, countdown)),
    el("td", { class: "num remaining", title: "units still on sale, as the sale's event stream last told" }, String(v.remaining)),
    el("td", { class: "num stock" }, String(v.stock)),
    el("td", { class: "barcol" }, el("div", { class: "bar", title: Math.round(sold * 100) + "% sold" },
      el("div", { style: "width:" + (sold * 100).toFixed(1) + "%" }))));
  if (who === "user") tr.append(el("td", { class: "grabcol" }, grabCell(v, state)));
  if (who !== "admin") return [tr];
  tr.append(actions(v, state));
  const detail = el("tr", { class: "detail", "data-detail-for": v.id },
    el("td", { colspan: "7" }, el("div", { class: "detail-grid" }, counts(v), chart(v))));
  return [tr, detail];
}

// showWho marks the page with the token's role (body.role-admin, body.role-user: the
// CSS shows each role's parts) and says in the header whose token is kept.
function showWho(who) {
  document.body.classList.toggle("role-admin", who === "admin");
  document.body.classList.toggle("role-user", who === "user");
  document.body.dataset.role = who;
  const sign = document.getElementById("who");
  sign.hidden = who === "";
  sign.classList.toggle("admin-sign", who === "admin");
  const c = claims();
  let text = who === "admin" ? "admin token in use" : c && c.sub ? `signed in as user ${c.sub}` : "a token that is no JWT";
  if (c && typeof c.exp === "number" && serverNow() !== null && c.exp * 1000 <= serverNow()) text += " (expired)";
  if (S.refused) text += " · refused: " + S.refused;
  document.getElementById("who-text").textContent = text;
}

// render draws the list as last read; a button that had the focus keeps it.
export function render() {
  const who = role();
  showWho(who);
  const active = document.activeElement;
  const focused = active && active.dataset && active.dataset.action && active.closest("tr[data-voucher-id]");
  const keep = focused ? [focused.dataset.voucherId, active.dataset.action] : null;
  document.querySelector("#vouchers tbody").replaceChildren(...S.vouchers.flatMap((v) => rows(v, who)));
  document.getElementById("empty").hidden = S.vouchers.length > 0;
  renderCampaigns();
  if (who === "user") showOrders();
  if (keep) {
    const b = document.querySelector(`tr[data-voucher-id="${keep[0]}"] button[data-action="${keep[1]}"]`);
    if (b) b.focus();
  }
}

// showVoucher puts a voucher as an answer left it on the page at once.
export function showVoucher(v) {
  S.answers++;
  S.vouchers = S.vouchers.map((w) => (w.id === v.id ? v : w));
  render();
}

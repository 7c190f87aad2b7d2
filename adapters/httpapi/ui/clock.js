// The server's clock, which judges every sale, and the countdowns told by it.
//
// A device's clock is often seconds off, and a countdown by it fires early or late.
// GET /api/v1/time is read as NTP reads a server: it read its clock about halfway
// through the round trip, so the shortest of a few round trips places it best. The
// reading is carried forward by performance.now(), this page's monotonic clock, so
// neither this device's wall clock nor a step of it enters the page's time.

let clock = null; // {serverMs, at (performance.now() when the server read serverMs), rtt}

// measureClock reads the server's clock (three round trips, the shortest kept).
export async function measureClock() {
  let best = null;
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    const res = await fetch("/api/v1/time", { cache: "no-store" });
    const end = performance.now();
    if (!res.ok) continue;
    const body = await res.json();
    if (!best || end - start < best.rtt) best = { serverMs: body.unix_ms, at: (start + end) / 2, rtt: end - start };
  }
  if (best) clock = best;
}

// serverNow is the server's time now, in Unix ms; null until it is measured.
export function serverNow() {
  return clock ? clock.serverMs + (performance.now() - clock.at) : null;
}

const DAY_MS = 24 * 3600 * 1000;

// duration spells ms as "5d 03h", "1h 02m", "3m 05s" or "42s", rounded up to the
// second: days from two days on.
export function duration(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  if (d >= 2) return `${d}d ${two(h % 24)}h`;
  if (h > 0) return `${h}h ${two(m)}m`;
  if (m > 0) return `${m}m ${two(sec)}s`;
  return `${sec}s`;
}

// until tells a moment at (Unix ms) from now: "in 3m 05s", or, 30 days off or more,
// its date ("on 4 Dec 2098"), since a count of days that far says little.
export function until(at, now) {
  if (at - now >= 30 * DAY_MS) {
    return "on " + new Date(at).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
  }
  return "in " + duration(at - now);
}

// saleState is the voucher's state as the server answered it, carried forward by the
// server's clock to now (between two reads a sale may begin or end), with the
// countdown to its next moment: "starts in …" while upcoming, "ends in …" until it ends.
export function saleState(v, now) {
  let state = v.state;
  const begins = Date.parse(v.begins_at), ends = Date.parse(v.ends_at);
  if (now !== null && state !== "ended" && now >= ends) state = "ended";
  if (now !== null && state === "upcoming" && now >= begins) state = v.paused ? "paused" : v.remaining > 0 ? "live" : "sold_out";
  let countdown = "";
  if (now !== null && state === "upcoming") countdown = "starts " + until(begins, now);
  else if (now !== null && state !== "ended") countdown = "ends " + until(ends, now);
  return [state, countdown];
}

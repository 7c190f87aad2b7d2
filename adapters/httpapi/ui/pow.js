// The proof of work a sale with a challenge ("challenge": "pow") asks of each grab and
// queue join: the page fetches a challenge and solves it itself, so a person never
// sees it.

import { getJSON } from "./api.js";
import { note } from "./dom.js";

// proofFor fetches a challenge of v (or, given path, of the sale at path: a
// campaign's, for a join of its waiting room) for the token's user and solves it (""
// when v asks for none).
export async function proofFor(v, path = `/api/v1/vouchers/${v.id}`) {
  if (v.challenge !== "pow") return "";
  note(`voucher ${v.id}: proving…`);
  const c = await getJSON(`${path}/challenge`, true);
  return solve(c.challenge, c.difficulty);
}

// solve answers a proof-of-work challenge as the contract asks: the first decimal
// nonce whose SHA-256(challenge + ":" + nonce) starts with difficulty zero bits, by
// Web Crypto (which browsers offer on https and on localhost only), a batch of
// hashes at a time so the page stays responsive. It returns the proof,
// "<challenge>:<nonce>".
export async function solve(challenge, difficulty) {
  if (!crypto.subtle) throw new Error("solving the sale's challenge needs Web Crypto: open this page over https (or on localhost)");
  const text = new TextEncoder();
  const BATCH = 512;
  for (let n = 0; ; n += BATCH) {
    const sums = await Promise.all(Array.from({ length: BATCH },
      (_, i) => crypto.subtle.digest("SHA-256", text.encode(`${challenge}:${n + i}`))));
    const i = sums.findIndex((sum) => leadingZeros(new Uint8Array(sum), difficulty));
    if (i >= 0) return `${challenge}:${n + i}`;
  }
}

// leadingZeros tells whether sum starts with at least bits zero bits.
function leadingZeros(sum, bits) {
  let i = 0;
  for (; bits >= 8; bits -= 8, i++) if (sum[i] !== 0) return false;
  return bits === 0 || sum[i] >> (8 - bits) === 0;
}

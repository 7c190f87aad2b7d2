// The page's calls of the API: the token it sends (kept in this tab's sessionStorage)
// and who it names, and the reads and writes that need no more than a path.

const TOKEN_KEY = "seckill.token";

// token is the bearer token pasted in this tab, "" when none.
export function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

// keepToken keeps t for this tab ("" forgets it).
export function keepToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
}

// claims are the token's claims, read from its payload (the JWT's middle part,
// base64url JSON), or null when it is no JWT. The page does not check the signature
// (it cannot: the secret is the server's); it only chooses what to show by them. The
// server judges every call, so a forged role gets a page whose calls are refused.
export function claims(t = token()) {
  const part = t.split(".")[1];
  if (!part) return null;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "=");
    const c = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0))));
    return c && typeof c === "object" && !Array.isArray(c) ? c : null;
  } catch {
    return null;
  }
}

// role is whose page this is: "" without a token, "admin" for a token whose role
// claim is "admin" (as the server reads it), "user" for any other: a shopper.
export function role() {
  const t = token();
  if (t === "") return "";
  const c = claims(t);
  return c && c.role === "admin" ? "admin" : "user";
}

// bearer is the Authorization header of the token, plus more headers.
export function bearer(more) {
  return Object.assign({ Authorization: "Bearer " + token() }, more || {});
}

// refusal is the error of an answer that is not 2xx: the contract's code and message,
// and the status. (An error without .refused is a request that got no answer.)
export async function refusal(res) {
  const body = await res.json().catch(() => null);
  const e = body && body.error;
  return Object.assign(new Error(e ? `${e.code}: ${e.message}` : `HTTP ${res.status}`), { refused: true, status: res.status });
}

// getJSON reads path (with the token when auth), or throws its refusal.
export async function getJSON(path, auth) {
  const res = await fetch(path, { headers: auth ? bearer() : {}, cache: "no-store" });
  if (!res.ok) {
    const e = await refusal(res);
    throw Object.assign(new Error(path + ": " + e.message), { refused: true, status: res.status });
  }
  return res.json();
}

// idempotencyKey is 128 random bits in hex (crypto.getRandomValues works on plain
// http too, where crypto.randomUUID does not).
export function idempotencyKey() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

let pendingEdit = null; // an edit sent and not answered: {id, body, key}; a retry of it keeps its key

// patchVoucher sends an edit and answers the voucher as it left it. The edit goes under
// an Idempotency-Key, kept until the server answers: sent again after a network
// failure (the same edit, say by a second click), it is done once.
export async function patchVoucher(id, edit) {
  const body = JSON.stringify(edit);
  if (!pendingEdit || pendingEdit.id !== id || pendingEdit.body !== body) pendingEdit = { id, body, key: idempotencyKey() };
  const res = await fetch(`/api/v1/vouchers/${id}`, {
    method: "PATCH", body,
    headers: bearer({ "Content-Type": "application/json", "Idempotency-Key": pendingEdit.key }),
  });
  pendingEdit = null;
  if (!res.ok) throw await refusal(res);
  return res.json();
}

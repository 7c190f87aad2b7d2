// What the page knows, shared by its modules: the vouchers last read or told by their
// streams, and what it read beside them.

export const MAX_STATS = 20; // vouchers whose stats (or places, draws) are read each second

export const S = {
  vouchers: [], // the last list read, each voucher as its stream last told it
  campaigns: [], // the newest page of campaigns (GET /api/v1/campaigns)
  stats: {}, // voucher id → its last stats answer (admins)
  statsAt: {}, // voucher id → the server's time (Unix ms) its stats answer came
  draws: {}, // draw voucher id → its last GET …/draw answer (anyone may read it)
  dropDraws: {}, // draw campaign id → its last GET …/campaigns/{id}/draw answer (anyone may read it)
  entered: {}, // draw campaign id → the voucher the token's user last chose in its draw from this page
  places: {}, // waiting room's key (roomOf: a voucher id, or "c<campaign id>") → the token's user's place (GET …/queue), null when not in the queue
  queues: {}, // waiting room's key → its figures (GET …/queue/stats; admins)
  shuffled: {}, // waiting room's key → its shuffle's entrants counted from GET …/queue/entrants (never changes)
  orders: null, // the token's user's newest orders (GET /api/v1/orders), null until read
  refused: "", // why the server refused the token, "" while it does not
  answers: 0, // vouchers shown from an action's answer: a list read before one is stale
  events: 0, // voucher events received; eventSeen[id] is the count at id's last one
  eventSeen: {},
  listReadAt: -Infinity, // performance.now() of the last list read
  allFollowed: false, // every open sale listed can have its stream (no more than MAX_FOLLOWED)
  grabbing: new Set(), // voucher ids whose grab (or queue join) is under way
  editing: null, // the voucher the edit form changes
};

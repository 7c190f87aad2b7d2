-- The Redis servers whose sale state was last made the database's (a heal after a
-- restart or failover, or at first sight), by their run_id: a server that comes back
-- under another run_id (a restart, perhaps from an older snapshot) is healed again
-- before it takes grabs, even when no instance that was running saw it go — the
-- instances may have restarted with it. server is '' for the one server (or Sentinel's
-- master) and the node id on a Redis Cluster.
CREATE TABLE redis_heals (
    server    TEXT        PRIMARY KEY,
    run_id    TEXT        NOT NULL,
    healed_at TIMESTAMPTZ NOT NULL
);

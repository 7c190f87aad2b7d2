-- The waiting room's passes the postgres stock strategy has used: a pass admits one
-- order, so the grab transaction that takes a waiting room's grab inserts its pass
-- here, and a pass found here admits nothing more (403 queue_required). The Redis
-- strategies keep the outstanding passes in Redis instead. A pass is named by its
-- voucher, its user and its expiry (Unix ms), as its signed token carries them.
CREATE TABLE used_passes (
    voucher_id BIGINT NOT NULL REFERENCES vouchers (id),
    user_id    BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL,
    PRIMARY KEY (voucher_id, user_id, expires_ms)
);

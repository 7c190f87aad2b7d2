-- The audit log: one row per admin change (a voucher created, edited, paused or
-- resumed, a repair by reconciliation), written in the same transaction as the change,
-- so a change that fails leaves no entry. Rows are only ever appended: the triggers
-- below refuse to change or delete one. before and after are JSON objects (text) of
-- the values the change replaced and left; NULL where there are none.
CREATE TABLE audit_log (
    id         {{if eq .Dialect "sqlite"}}INTEGER PRIMARY KEY AUTOINCREMENT{{else}}BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY{{end}},
    at         TIMESTAMPTZ NOT NULL,
    actor      TEXT        NOT NULL,
    action     TEXT        NOT NULL,
    voucher_id BIGINT      NULL,
    request_id TEXT        NOT NULL DEFAULT '',
    before     TEXT        NULL,
    after      TEXT        NULL
);

--bun:split

-- One voucher's entries, newest first.
CREATE INDEX audit_log_voucher_id_id_idx ON audit_log (voucher_id, id);
{{if eq .Dialect "sqlite"}}
--bun:split

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;

--bun:split

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
{{else}}
--bun:split

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END
$$;

--bun:split

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
{{end}}
--bun:split

-- The version of a voucher's terms (stock, window, per-user limit): one more with each
-- edit that changes them. The grab path's sale state keeps the version it holds, so a
-- late write of older terms is refused and a state left behind is seen.
ALTER TABLE vouchers ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

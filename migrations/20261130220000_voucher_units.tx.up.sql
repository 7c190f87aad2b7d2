-- The units a voucher's orders hold in each status, kept by triggers as orders are
-- inserted, change status or are deleted, so a voucher's stats read a few rows
-- instead of scanning its orders, and no code path can forget to move them.
CREATE TABLE voucher_units (
    voucher_id BIGINT  NOT NULL,
    status     TEXT    NOT NULL,
    units      BIGINT  NOT NULL,
    PRIMARY KEY (voucher_id, status)
);

--bun:split

INSERT INTO voucher_units (voucher_id, status, units)
SELECT voucher_id, status, sum(quantity) FROM orders GROUP BY voucher_id, status;
{{if eq .Dialect "sqlite"}}
--bun:split

-- SQLite runs one writer at a time, so the triggers move the counters directly.
CREATE TRIGGER orders_units_insert AFTER INSERT ON orders BEGIN
    INSERT INTO voucher_units (voucher_id, status, units) VALUES (NEW.voucher_id, NEW.status, NEW.quantity)
        ON CONFLICT (voucher_id, status) DO UPDATE SET units = units + excluded.units;
END;

--bun:split

CREATE TRIGGER orders_units_update AFTER UPDATE OF voucher_id, status, quantity ON orders
WHEN OLD.voucher_id <> NEW.voucher_id OR OLD.status <> NEW.status OR OLD.quantity <> NEW.quantity BEGIN
    INSERT INTO voucher_units (voucher_id, status, units) VALUES (OLD.voucher_id, OLD.status, -OLD.quantity)
        ON CONFLICT (voucher_id, status) DO UPDATE SET units = units + excluded.units;
    INSERT INTO voucher_units (voucher_id, status, units) VALUES (NEW.voucher_id, NEW.status, NEW.quantity)
        ON CONFLICT (voucher_id, status) DO UPDATE SET units = units + excluded.units;
END;

--bun:split

CREATE TRIGGER orders_units_delete AFTER DELETE ON orders BEGIN
    INSERT INTO voucher_units (voucher_id, status, units) VALUES (OLD.voucher_id, OLD.status, -OLD.quantity)
        ON CONFLICT (voucher_id, status) DO UPDATE SET units = units + excluded.units;
END;
{{else}}
--bun:split

-- In PostgreSQL many transactions write orders at once. Were the triggers to update
-- voucher_units, every one would lock a voucher's counter rows, in its own order,
-- beside the order and voucher rows it locks already: a hot row, and deadlocks.
-- So the triggers only append changes here (an insert locks nothing anyone else
-- waits for), and sqlstore's FoldUnits moves them into voucher_units in batches.
-- A voucher's units are voucher_units plus its changes not yet folded.
CREATE TABLE voucher_unit_changes (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    voucher_id BIGINT NOT NULL,
    status     TEXT   NOT NULL,
    units      BIGINT NOT NULL
);

--bun:split

CREATE INDEX voucher_unit_changes_voucher_id_idx ON voucher_unit_changes (voucher_id);

--bun:split

-- One change row per voucher and status a statement touched, from its transition
-- tables: a statement that changes no status (MarkReleased) appends nothing.
CREATE FUNCTION orders_units_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO voucher_unit_changes (voucher_id, status, units)
        SELECT voucher_id, status, sum(quantity) FROM new_orders GROUP BY voucher_id, status;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO voucher_unit_changes (voucher_id, status, units)
        SELECT voucher_id, status, -sum(quantity) FROM old_orders GROUP BY voucher_id, status;
    ELSE
        INSERT INTO voucher_unit_changes (voucher_id, status, units)
        SELECT voucher_id, status, sum(units) FROM (
            SELECT voucher_id, status, -quantity AS units FROM old_orders
            UNION ALL
            SELECT voucher_id, status, quantity FROM new_orders
        ) moved GROUP BY voucher_id, status HAVING sum(units) <> 0;
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE TRIGGER orders_units_insert AFTER INSERT ON orders
    REFERENCING NEW TABLE AS new_orders FOR EACH STATEMENT EXECUTE FUNCTION orders_units_changed();

--bun:split

CREATE TRIGGER orders_units_update AFTER UPDATE ON orders
    REFERENCING OLD TABLE AS old_orders NEW TABLE AS new_orders FOR EACH STATEMENT EXECUTE FUNCTION orders_units_changed();

--bun:split

CREATE TRIGGER orders_units_delete AFTER DELETE ON orders
    REFERENCING OLD TABLE AS old_orders FOR EACH STATEMENT EXECUTE FUNCTION orders_units_changed();
{{end}}
--bun:split

-- Leases: which instance runs a periodic job alone (the reconciliation), until when,
-- and where the job stopped (state), so the next holder carries on from there.
CREATE TABLE leases (
    name       TEXT        PRIMARY KEY,
    holder     TEXT        NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    state      TEXT        NOT NULL DEFAULT ''
);

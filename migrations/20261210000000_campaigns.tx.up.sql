-- Campaigns (issue 37): a drop of several vouchers (its variants) under one window, an
-- optional cap on the units sold across them and a limit per user across them.
--
-- A campaign's variants take their voucher ids from a block of their own, above every
-- id the identity or AUTOINCREMENT ever gives a voucher (domain.CampaignID.Variant):
-- variant k (1..1000) of campaign c is 1099511627776 (2^40) + c * 1024 + k. So the
-- statements below tell a campaign's voucher from a plain one, and its campaign, from
-- the voucher id alone: (voucher_id - 1099511627776) / 1024 is the campaign, and
-- every trigger fires only for ids from 1099511627776 on, so a plain voucher and its
-- orders pay nothing for campaigns.
{{define "now"}}{{if eq .Dialect "sqlite"}}(strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')){{else}}now(){{end}}{{end}}
{{- define "live"}}('queued', 'awaiting_payment', 'paid'){{end}}
--
-- sold counts the units held by live orders of the campaign's vouchers: the triggers
-- on vouchers move it with each variant's sold counter, and its CHECK refuses to take
-- it past the cap, whichever statement tries. variants is how many vouchers the
-- campaign holds (ids Variant(1..variants)).
CREATE TABLE campaigns (
    id             {{if eq .Dialect "sqlite"}}INTEGER PRIMARY KEY AUTOINCREMENT{{else}}BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY{{end}},
    title          TEXT        NOT NULL,
    begins_at      TIMESTAMPTZ NOT NULL,
    ends_at        TIMESTAMPTZ NOT NULL,
    per_user_limit INTEGER     NOT NULL CONSTRAINT campaigns_per_user_limit_check CHECK (per_user_limit >= 1),
    cap            BIGINT      NULL CONSTRAINT campaigns_cap_check CHECK (cap >= 1),
    sold           BIGINT      NOT NULL DEFAULT 0,
    variants       INTEGER     NOT NULL DEFAULT 0 CONSTRAINT campaigns_variants_check CHECK (variants BETWEEN 0 AND 1000),
    admission      TEXT        NOT NULL DEFAULT 'first_come'
        CONSTRAINT campaigns_admission_check CHECK (admission IN ('first_come', 'waiting_room', 'draw')),
    challenge      TEXT        NOT NULL DEFAULT 'none' CONSTRAINT campaigns_challenge_check CHECK (challenge IN ('none', 'pow')),
    pow_difficulty INTEGER     NOT NULL DEFAULT 0,
    version        BIGINT      NOT NULL DEFAULT 0,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT {{template "now" .}},
    CONSTRAINT campaigns_sold_check CHECK (sold >= 0 AND (cap IS NULL OR sold <= cap)),
    CONSTRAINT campaigns_window_check CHECK (begins_at < ends_at)
);

--bun:split

-- The units each user's live orders hold across a campaign's vouchers, kept by the
-- triggers on orders below. Unlike voucher_units it is not appended to and folded on
-- PostgreSQL: its row is one user's of one campaign, hot only for that user, and the
-- trigger must read the sum to refuse the order that would pass the limit.
CREATE TABLE campaign_units (
    campaign_id BIGINT NOT NULL REFERENCES campaigns (id),
    user_id     BIGINT NOT NULL,
    units       BIGINT NOT NULL CONSTRAINT campaign_units_units_check CHECK (units >= 0),
    PRIMARY KEY (campaign_id, user_id)
);

--bun:split

-- The campaign a voucher is a variant of; NULL for a voucher outside any campaign.
ALTER TABLE vouchers ADD COLUMN campaign_id BIGINT NULL REFERENCES campaigns (id);

--bun:split

-- Entries of a change of a campaign name it; NULL for the rest.
ALTER TABLE audit_log ADD COLUMN campaign_id BIGINT NULL;
{{if eq .Dialect "sqlite"}}
--bun:split

-- The id scheme, as the database's own net: a voucher below 2^40 belongs to no
-- campaign, one from 2^40 on is variant 1..1000 of the campaign its id names. SQLite
-- cannot add a table CHECK to a table, and a column CHECK would see an
-- AUTOINCREMENT id as NULL (it is assigned after the checks), so triggers check it.
CREATE TRIGGER vouchers_campaign_check_insert AFTER INSERT ON vouchers
WHEN NOT (CASE WHEN NEW.id < 1099511627776 THEN NEW.campaign_id IS NULL ELSE coalesce(
    NEW.campaign_id = (NEW.id - 1099511627776) / 1024 AND (NEW.id - 1099511627776) % 1024 BETWEEN 1 AND 1000, 0) END)
BEGIN
    SELECT RAISE(ABORT, 'vouchers_campaign_check');
END;

--bun:split

CREATE TRIGGER vouchers_campaign_check_update AFTER UPDATE OF id, campaign_id ON vouchers
WHEN NOT (CASE WHEN NEW.id < 1099511627776 THEN NEW.campaign_id IS NULL ELSE coalesce(
    NEW.campaign_id = (NEW.id - 1099511627776) / 1024 AND (NEW.id - 1099511627776) % 1024 BETWEEN 1 AND 1000, 0) END)
BEGIN
    SELECT RAISE(ABORT, 'vouchers_campaign_check');
END;

--bun:split

-- A variant's sold counter moves its campaign's by as much (SQLite runs one writer,
-- so the triggers move the counters directly, as on PostgreSQL).
CREATE TRIGGER vouchers_campaign_sold_insert AFTER INSERT ON vouchers
WHEN NEW.id >= 1099511627776 AND NEW.sold <> 0 BEGIN
    UPDATE campaigns SET sold = sold + NEW.sold WHERE id = NEW.campaign_id;
END;

--bun:split

CREATE TRIGGER vouchers_campaign_sold_update AFTER UPDATE OF sold ON vouchers
WHEN NEW.id >= 1099511627776 AND NEW.sold <> OLD.sold BEGIN
    UPDATE campaigns SET sold = sold + NEW.sold - OLD.sold WHERE id = NEW.campaign_id;
END;

--bun:split

-- A user's units of a campaign follow their live orders of its vouchers, and an
-- increase that takes them past the campaign's per-user limit is refused.
CREATE TRIGGER orders_campaign_units_insert AFTER INSERT ON orders
WHEN NEW.voucher_id >= 1099511627776 AND NEW.status IN {{template "live"}} BEGIN
    INSERT INTO campaign_units (campaign_id, user_id, units)
        VALUES ((NEW.voucher_id - 1099511627776) / 1024, NEW.user_id, NEW.quantity)
        ON CONFLICT (campaign_id, user_id) DO UPDATE SET units = units + excluded.units;
    SELECT RAISE(ABORT, 'campaign_units_limit_check')
        FROM campaign_units u JOIN campaigns c ON c.id = u.campaign_id
        WHERE u.campaign_id = (NEW.voucher_id - 1099511627776) / 1024 AND u.user_id = NEW.user_id
            AND u.units > c.per_user_limit;
END;

--bun:split

-- The old row's units leave, the new row's arrive; only an increase of the user's
-- units is judged against the limit (a limit lowered below what a user holds refuses
-- their next order, not the closing of one).
CREATE TRIGGER orders_campaign_units_update AFTER UPDATE OF voucher_id, user_id, status, quantity ON orders
WHEN (OLD.voucher_id >= 1099511627776 OR NEW.voucher_id >= 1099511627776) AND (
    (OLD.status IN {{template "live"}}) <> (NEW.status IN {{template "live"}}) OR OLD.quantity <> NEW.quantity
    OR OLD.voucher_id <> NEW.voucher_id OR OLD.user_id <> NEW.user_id)
BEGIN
    UPDATE campaign_units SET units = units - OLD.quantity
        WHERE OLD.voucher_id >= 1099511627776 AND OLD.status IN {{template "live"}}
            AND campaign_id = (OLD.voucher_id - 1099511627776) / 1024 AND user_id = OLD.user_id;
    INSERT INTO campaign_units (campaign_id, user_id, units)
        SELECT (NEW.voucher_id - 1099511627776) / 1024, NEW.user_id, NEW.quantity
        WHERE NEW.voucher_id >= 1099511627776 AND NEW.status IN {{template "live"}}
        ON CONFLICT (campaign_id, user_id) DO UPDATE SET units = units + excluded.units;
    SELECT RAISE(ABORT, 'campaign_units_limit_check')
        FROM campaign_units u JOIN campaigns c ON c.id = u.campaign_id
        WHERE NEW.voucher_id >= 1099511627776 AND NEW.status IN {{template "live"}}
            AND u.campaign_id = (NEW.voucher_id - 1099511627776) / 1024 AND u.user_id = NEW.user_id
            AND u.units > c.per_user_limit
            AND NEW.quantity > CASE WHEN OLD.voucher_id >= 1099511627776 AND OLD.status IN {{template "live"}}
                AND OLD.voucher_id / 1024 = NEW.voucher_id / 1024 AND OLD.user_id = NEW.user_id
                THEN OLD.quantity ELSE 0 END;
END;

--bun:split

CREATE TRIGGER orders_campaign_units_delete AFTER DELETE ON orders
WHEN OLD.voucher_id >= 1099511627776 AND OLD.status IN {{template "live"}} BEGIN
    UPDATE campaign_units SET units = units - OLD.quantity
        WHERE campaign_id = (OLD.voucher_id - 1099511627776) / 1024 AND user_id = OLD.user_id;
END;
{{else}}
--bun:split

-- The id scheme, as the database's own net: a voucher below 2^40 belongs to no
-- campaign, one from 2^40 on is variant 1..1000 of the campaign its id names.
ALTER TABLE vouchers ADD CONSTRAINT vouchers_campaign_check CHECK (CASE WHEN id < 1099511627776 THEN campaign_id IS NULL
    ELSE coalesce(campaign_id = (id - 1099511627776) / 1024 AND (id - 1099511627776) % 1024 BETWEEN 1 AND 1000, false) END);

--bun:split

-- A variant's sold counter moves its campaign's by as much. The campaign's row is
-- locked by the update; sqlstore takes that lock before the voucher's row in every
-- transaction that moves sold, so the two never wait for each other crosswise.
CREATE FUNCTION vouchers_campaign_sold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE campaigns SET sold = sold + NEW.sold WHERE id = NEW.campaign_id;
    ELSE
        UPDATE campaigns SET sold = sold + NEW.sold - OLD.sold WHERE id = NEW.campaign_id;
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE TRIGGER vouchers_campaign_sold_insert AFTER INSERT ON vouchers
    FOR EACH ROW WHEN (NEW.id >= 1099511627776 AND NEW.sold <> 0) EXECUTE FUNCTION vouchers_campaign_sold();

--bun:split

CREATE TRIGGER vouchers_campaign_sold_update AFTER UPDATE OF sold ON vouchers
    FOR EACH ROW WHEN (NEW.id >= 1099511627776 AND NEW.sold <> OLD.sold) EXECUTE FUNCTION vouchers_campaign_sold();

--bun:split

-- A user's units of a campaign follow their live orders of its vouchers: the old
-- row's units leave, the new row's arrive (one change of the row when both are the
-- same user's of the same campaign), and an increase that takes them past the
-- campaign's per-user limit raises a check_violation named
-- campaign_units_limit_check. Only an increase is judged: a limit lowered below what
-- a user holds refuses their next order, not the closing of one.
--
-- Row triggers fire after their statement, in the order of its rows, so a statement
-- locks the users' rows in the order it wrote the orders: Persist writes them sorted
-- by campaign and user, and the expiry locks them so first.
CREATE FUNCTION orders_campaign_units() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_units BIGINT := 0;
    new_units BIGINT := 0;
    held      BIGINT;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        IF OLD.voucher_id >= 1099511627776 AND OLD.status IN {{template "live"}} THEN
            old_units := OLD.quantity;
        END IF;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        IF NEW.voucher_id >= 1099511627776 AND NEW.status IN {{template "live"}} THEN
            new_units := NEW.quantity;
        END IF;
        IF TG_OP = 'UPDATE' AND OLD.voucher_id / 1024 = NEW.voucher_id / 1024 AND OLD.user_id = NEW.user_id THEN
            new_units := new_units - old_units;
            old_units := 0;
        END IF;
    END IF;
    IF old_units <> 0 THEN
        UPDATE campaign_units SET units = units - old_units
            WHERE campaign_id = (OLD.voucher_id - 1099511627776) / 1024 AND user_id = OLD.user_id;
    END IF;
    -- A decrease updates the row its order's insert made (an insert of negative units
    -- would trip the CHECK before meeting the row); an increase may make it.
    IF new_units < 0 THEN
        UPDATE campaign_units SET units = units + new_units
            WHERE campaign_id = (NEW.voucher_id - 1099511627776) / 1024 AND user_id = NEW.user_id;
    ELSIF new_units > 0 THEN
        INSERT INTO campaign_units AS u (campaign_id, user_id, units)
            VALUES ((NEW.voucher_id - 1099511627776) / 1024, NEW.user_id, new_units)
            ON CONFLICT (campaign_id, user_id) DO UPDATE SET units = u.units + excluded.units
            RETURNING units INTO held;
        IF held > (SELECT per_user_limit FROM campaigns WHERE id = (NEW.voucher_id - 1099511627776) / 1024) THEN
            RAISE EXCEPTION 'user % would hold % units of campaign %, over its per-user limit',
                NEW.user_id, held, (NEW.voucher_id - 1099511627776) / 1024
                USING ERRCODE = 'check_violation', CONSTRAINT = 'campaign_units_limit_check', TABLE = 'campaign_units';
        END IF;
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE TRIGGER orders_campaign_units_insert AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.voucher_id >= 1099511627776 AND NEW.status IN {{template "live"}})
    EXECUTE FUNCTION orders_campaign_units();

--bun:split

CREATE TRIGGER orders_campaign_units_update AFTER UPDATE OF voucher_id, user_id, status, quantity ON orders
    FOR EACH ROW WHEN ((OLD.voucher_id >= 1099511627776 OR NEW.voucher_id >= 1099511627776) AND (
        (OLD.status IN {{template "live"}}) <> (NEW.status IN {{template "live"}}) OR OLD.quantity <> NEW.quantity
        OR OLD.voucher_id <> NEW.voucher_id OR OLD.user_id <> NEW.user_id))
    EXECUTE FUNCTION orders_campaign_units();

--bun:split

CREATE TRIGGER orders_campaign_units_delete AFTER DELETE ON orders
    FOR EACH ROW WHEN (OLD.voucher_id >= 1099511627776 AND OLD.status IN {{template "live"}})
    EXECUTE FUNCTION orders_campaign_units();
{{end}}

-- Rolling campaigns back forgets them with their vouchers and those vouchers' orders:
-- kept, the vouchers would hold ids in the campaigns' block with no campaign, which a
-- later migration up refuses (the id scheme's check), and on SQLite AUTOINCREMENT
-- would go on giving new vouchers ids in that block.
DELETE FROM orders WHERE voucher_id >= 1099511627776;

--bun:split

DELETE FROM voucher_units WHERE voucher_id >= 1099511627776;
{{if ne .Dialect "sqlite"}}
--bun:split

DELETE FROM voucher_unit_changes WHERE voucher_id >= 1099511627776;
{{end}}
--bun:split

DELETE FROM used_passes WHERE voucher_id >= 1099511627776;

--bun:split

DELETE FROM draws WHERE voucher_id >= 1099511627776;

--bun:split

DELETE FROM vouchers WHERE id >= 1099511627776;

--bun:split

DROP TRIGGER orders_campaign_units_insert{{if ne .Dialect "sqlite"}} ON orders{{end}};

--bun:split

DROP TRIGGER orders_campaign_units_update{{if ne .Dialect "sqlite"}} ON orders{{end}};

--bun:split

DROP TRIGGER orders_campaign_units_delete{{if ne .Dialect "sqlite"}} ON orders{{end}};

--bun:split

DROP TRIGGER vouchers_campaign_sold_insert{{if ne .Dialect "sqlite"}} ON vouchers{{end}};

--bun:split

DROP TRIGGER vouchers_campaign_sold_update{{if ne .Dialect "sqlite"}} ON vouchers{{end}};
{{if eq .Dialect "sqlite"}}
--bun:split

DROP TRIGGER vouchers_campaign_check_insert;

--bun:split

DROP TRIGGER vouchers_campaign_check_update;
{{else}}
--bun:split

DROP FUNCTION orders_campaign_units();

--bun:split

DROP FUNCTION vouchers_campaign_sold();

--bun:split

ALTER TABLE vouchers DROP CONSTRAINT vouchers_campaign_check;
{{end}}
--bun:split

ALTER TABLE audit_log DROP COLUMN campaign_id;

--bun:split

ALTER TABLE vouchers DROP COLUMN campaign_id;

--bun:split

DROP TABLE campaign_units;

--bun:split

DROP TABLE campaigns;

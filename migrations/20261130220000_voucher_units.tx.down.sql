DROP TABLE leases;

--bun:split

DROP TRIGGER orders_units_insert{{if ne .Dialect "sqlite"}} ON orders{{end}};

--bun:split

DROP TRIGGER orders_units_update{{if ne .Dialect "sqlite"}} ON orders{{end}};

--bun:split

DROP TRIGGER orders_units_delete{{if ne .Dialect "sqlite"}} ON orders{{end}};
{{if ne .Dialect "sqlite"}}
--bun:split

DROP FUNCTION orders_units_changed();

--bun:split

DROP TABLE voucher_unit_changes;
{{end}}
--bun:split

DROP TABLE voucher_units;

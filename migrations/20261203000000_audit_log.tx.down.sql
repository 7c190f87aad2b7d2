ALTER TABLE vouchers DROP COLUMN version;

--bun:split

DROP TABLE audit_log;
{{if ne .Dialect "sqlite"}}
--bun:split

DROP FUNCTION audit_log_append_only();
{{end}}

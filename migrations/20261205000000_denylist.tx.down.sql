DROP TABLE denylist;

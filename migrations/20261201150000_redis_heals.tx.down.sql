DROP TABLE redis_heals;

DROP TABLE draws;

DROP TABLE used_passes;

DROP TABLE room_shuffles;

DROP TABLE webhook_outbox;

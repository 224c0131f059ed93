"""The application side of a consumer: `core.ApplicationCore` (what the application thread
decides), its `ports` and `state`, and how commits look to confluent-kafka users (`commits`)."""

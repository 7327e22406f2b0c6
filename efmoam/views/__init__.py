"""What ``show`` shows: `data` makes the views (plain data with stable keys, the JSON of
``-f json``) from the engine; `text` renders them for people without importing the
engine or scapy, so the CLI stays light."""

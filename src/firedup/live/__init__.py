"""A server starting now: wait (follow + probe), replay, and the history `wait` draws on."""

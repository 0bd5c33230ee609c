"""Events to runs: one pipeline from files to `Run` objects, computed once (phases, crash, config)."""

"""Many runs as polars tables: frames, the history store, exports, comparisons and budgets."""

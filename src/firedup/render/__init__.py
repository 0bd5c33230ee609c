"""Views of computed runs, comparisons and budgets: text, charts, the report, snippets."""

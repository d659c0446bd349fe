"""causal-middleware: which step made the run fail, proved by intervention."""

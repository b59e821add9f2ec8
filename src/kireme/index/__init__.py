"""Index and retrieve: vector stores, incremental ingestion, search, and context for a reader."""

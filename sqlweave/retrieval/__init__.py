"""Retrieval: lexical indexes, the example pool, question and SQL skeletons for example selection."""

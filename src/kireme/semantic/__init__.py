"""Semantic chunking: cut where adjacent sentences stop being similar."""

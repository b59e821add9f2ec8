"""Semantic chunking: cut where adjacent sentences stop being similar."""

# The rules `auto[:RULE]` thresholds know; here, not in `thresholds`, so that the CLI can list them in
# its help without importing numpy.
AUTO_RULES = ("depth", "otsu", "gap", "kcpd")

"""Types of the optional C extension `kireme._speedups` (src/kireme/_speedups.c)."""

def scan_sentence_cuts(
    text: str, a: int, b: int, block_starts: list[int], /
) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """Sentence starts decided in C, the protected quotations, and the candidates Python must judge."""

def vocabulary() -> tuple[str, str, str, str]:
    """The marks compiled in: terminators, closers, opening brackets and their closing brackets."""

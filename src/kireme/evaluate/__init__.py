"""Measuring chunkings: boundary metrics now; retrieval metrics and datasets as they are built."""

from kireme.evaluate.segmentation import BoundaryScores, boundary_scores, pk, windowdiff

__all__ = ["BoundaryScores", "boundary_scores", "pk", "windowdiff"]

"""Text segmentation: grapheme clusters, sentences, paragraphs, whitespace."""

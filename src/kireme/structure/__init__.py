"""Structure-aware chunking: outlines of Markdown/HTML/notebook/PDF/docx/CSV documents, tables, context."""

"""A question made ready for a reader model: retrieved, assembled within its token budget, put in a prompt.

`kireme ask` and ``kireme serve``'s ``POST /ask`` both call `prepare_question`, so the context a model
reads is the same whichever way the question came in: the hits of a `kireme.index.search.Searcher`,
assembled from exact offsets within the budget the reader's window leaves (`kireme.index.prompt`), each
passage under a line citing its source (`kireme.index.passages.render_passages`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kireme.assemble import DEFAULT_WIDEN
from kireme.errors import ConfigError
from kireme.index.context import DEFAULT_ANSWER_RESERVE, DEFAULT_READER_TOKENS, AssembledContext
from kireme.index.passages import candidates_for, manifest_texts, render_passages
from kireme.index.prompt import build_prompt, context_budget, default_template
from kireme.index.store import Hit


@dataclass(frozen=True)
class AskSettings:
    """What `prepare_question` retrieves and how much it passes.

    ``budget``: tokens of context (``None``: what a ``reader_tokens`` window leaves after the question,
    the template and ``answer_reserve`` for the answer). ``template``: the prompt text with
    ``{context}`` and ``{question}`` (``None``: the built-in one for ``language``).
    """

    k: int = 5
    mode: str = "hybrid"
    where: Mapping[str, str] | None = None
    exact: bool = False
    budget: int | None = None
    reader_tokens: int = DEFAULT_READER_TOKENS
    answer_reserve: int = DEFAULT_ANSWER_RESERVE
    template: str | None = None
    language: str = "ja"
    widen: float = DEFAULT_WIDEN
    comments: bool = False  # pass the HTML comments of Markdown documents too


@dataclass(frozen=True)
class PreparedQuestion:
    """The prompt for the reader and how its context was made.

    ``room`` is the context the reader's window leaves; ``budget`` the one used (``room`` unless a
    budget was asked for); ``over_room`` says an asked-for budget is larger than the window allows.
    """

    question: str
    prompt: str
    context: AssembledContext
    budget: int
    room: int
    hits: tuple[Hit, ...] = field(default=(), repr=False)

    @property
    def over_room(self) -> bool:
        return self.budget > self.room

    def over_room_note(self, reader_tokens: int, answer_reserve: int) -> str:
        """What `over_room` means, after the word for the budget (``--budget``, ``budget``): how much the
        reader's window leaves — said alike by ``kireme ask`` and ``POST /ask``."""
        return (
            f"{self.budget} is more than the {self.room} tokens a {reader_tokens}-token reader leaves after "
            f"the question, the template and {answer_reserve} for the answer"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``POST /ask`` (without the answer): the context text, its size and budget, whether
        the best hit was cut to fit or left out (no sentence of it fitted; ``best_needs``: the budget that
        passes a part of it), the context the reader's window leaves (``room``) and whether the budget asked
        for is more (``over_room``), and the sources cited in it (each with the offsets of its passages)."""
        return {
            "question": self.question,
            "context": self.context.text,
            "tokens": self.context.tokens,
            "budget": self.budget,
            "cut": self.context.best_cut,
            "best_left_out": self.context.best_left_out,
            "best_needs": self.context.best_needs,
            "room": self.room,
            "over_room": self.over_room,
            "sources": [
                {
                    "number": s.number,
                    "label": s.label,
                    "source": s.source,
                    "doc_id": s.doc_id,
                    "title": s.title,
                    "headings": [list(path) for path in s.headings],
                    "pages": list(s.pages),
                    "spans": [{"start": a, "end": b} for a, b in s.spans],
                }
                for s in self.context.sources
            ],
        }


def prepare_question(searcher: Any, question: str, settings: AskSettings | None = None) -> PreparedQuestion:
    """Retrieve for ``question`` from ``searcher`` (a `kireme.index.search.Searcher`) and fit the context
    into the reader's budget; a bad setting is a `kireme.errors.ConfigError`."""
    settings = settings or AskSettings()
    template = settings.template if settings.template is not None else default_template(settings.language)
    room = context_budget(
        question,
        template,
        language=settings.language,
        reader_tokens=settings.reader_tokens,
        answer_reserve=settings.answer_reserve,
    )
    budget = settings.budget if settings.budget is not None else room
    hits = searcher.search(
        question,
        candidates_for(budget, "tokens", max(settings.k, 1) * 2),
        settings.mode,
        settings.where,
        exact=settings.exact,
    )
    context = render_passages(
        hits,
        budget,
        manifest_texts(searcher.db),
        query=question,
        widen=settings.widen,
        comments=settings.comments,
    )
    if settings.budget is not None and hits and not context.text:  # never a question without its context
        shortest = (
            f" (the shortest that can be passed, with that line, is {context.best_needs} tokens)"
            if context.best_needs > budget
            else ""
        )
        raise ConfigError(
            f"a budget of {budget} tokens is smaller than one sentence of the best hit with the line that "
            f"cites its source{shortest}; raise the budget (or leave it out: the reader leaves room for {room})"
        )
    prompt = build_prompt(question, context.text, template, language=settings.language)
    return PreparedQuestion(question, prompt, context, budget, room, tuple(hits))

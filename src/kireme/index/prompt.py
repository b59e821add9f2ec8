"""The prompt a reader model answers: a template with ``{context}`` and ``{question}`` filled in.

The default templates (Japanese, and English with ``language="en"``) tell the reader to answer only
from the given information, to say so when the answer is not there (``資料からは分かりません``), and to
cite sources by their ``[n]`` numbers from `kireme.index.context.assemble_context`.

Placeholders are filled in one pass over the template (not ``str.format``, and not one ``str.replace``
after another), so braces in documents or questions are kept as they are, and a document that happens
to contain ``{question}`` is not filled in a second time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from kireme.errors import ConfigError
from kireme.index.context import DEFAULT_ANSWER_RESERVE, DEFAULT_READER_TOKENS, default_budget
from kireme.length import Tokens

PLACEHOLDERS = ("{context}", "{question}")
_PLACEHOLDER = re.compile(r"\{(context|question)\}")

NOT_FOUND_JA = "資料からは分かりません"
NOT_FOUND_EN = "The documents do not say."

DEFAULT_TEMPLATE_JA = f"""\
あなたは与えられた資料に基づいて質問に答えるアシスタントです。
次の「資料」に書かれている情報だけを根拠にして、「質問」に日本語で答えてください。
- 資料に書かれていないことを推測や一般知識で補わないでください。
- 答えが資料にない場合は「{NOT_FOUND_JA}」とだけ答えてください。
- 根拠にした資料の番号を、該当する文の末尾に [1] のように示してください。

# 資料
{{context}}

# 質問
{{question}}

# 回答
"""

DEFAULT_TEMPLATE_EN = f"""\
You answer questions from the documents you are given.
Answer the question using only the information in the documents below.
- Do not fill gaps with guesses or general knowledge.
- If the answer is not in the documents, reply only: "{NOT_FOUND_EN}"
- Cite the number of each document you used at the end of the sentence, like [1].

# Documents
{{context}}

# Question
{{question}}

# Answer
"""

TEMPLATES = {"ja": DEFAULT_TEMPLATE_JA, "en": DEFAULT_TEMPLATE_EN}
NOT_FOUND = {"ja": NOT_FOUND_JA, "en": NOT_FOUND_EN}


def default_template(language: str = "ja") -> str:
    """The built-in template for ``"ja"`` (the default) or ``"en"``."""
    try:
        return TEMPLATES[language]
    except KeyError:
        raise ConfigError(
            f"no prompt template for language {language!r}: choose one of {', '.join(TEMPLATES)}"
        ) from None


def check_template(template: str, origin: str = "prompt template") -> str:
    """``template`` itself, or `ConfigError` naming each placeholder it lacks, or a ``{context}`` it holds
    more than once (the budget counts the context once: twice, the prompt would outgrow the reader)."""
    missing = [p for p in PLACEHOLDERS if p not in template]
    if missing:
        raise ConfigError(
            f"{origin} has no {' or '.join(missing)} placeholder; "
            "a template needs both {context} and {question}"
        )
    times = len(re.findall(r"\{context\}", template))
    if times > 1:
        raise ConfigError(
            f"{origin} holds {{context}} {times} times; put it once (the context's budget counts it once)"
        )
    return template


def load_template(path: str | Path) -> str:
    """A user's template file (UTF-8, a BOM is dropped), checked for both placeholders."""
    path = Path(path)
    try:
        template = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"prompt template {str(path)!r} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"prompt template {str(path)!r} is not UTF-8 (byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read prompt template {str(path)!r}: {exc.strerror or exc}") from None
    return check_template(template, f"prompt template {str(path)!r}")


def build_prompt(question: str, context: str, template: str | None = None, *, language: str = "ja") -> str:
    """``template`` (default: the built-in one for ``language``) with the context and question filled in."""
    template = default_template(language) if template is None else check_template(template)
    values = {"context": context, "question": question}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def context_budget(
    question: str,
    template: str | None = None,
    *,
    language: str = "ja",
    reader_tokens: int = DEFAULT_READER_TOKENS,
    answer_reserve: int = DEFAULT_ANSWER_RESERVE,
    measure: Callable[[str], int] | None = None,
) -> int:
    """`default_budget` for this question and template, both measured (default: cl100k_base tokens).

    The prompt without context is measured as a whole; BPE merges at the seams can make the final
    prompt differ from "that plus the context" by a token or two, well inside ``answer_reserve``.
    """
    measure = measure if measure is not None else Tokens()
    question_tokens = measure(question)
    fixed = measure(build_prompt(question, "", template, language=language))
    return default_budget(
        reader_tokens=reader_tokens,
        question_tokens=question_tokens,
        answer_reserve=answer_reserve,
        template_tokens=max(0, fixed - question_tokens),
    )

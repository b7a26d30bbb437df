"""The analyzer's words: which words of a question carry its content (pure)."""

from __future__ import annotations

import pytest

from memstore.search.analysis import analyzer, content_words, run_terms


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("When did Caroline go to the LGBTQ support group?", "Caroline go LGBTQ support group"),
        ("What is the HPA setting in May 2026?", "HPA setting May 2026"),
        ("how do we deploy", "deploy"),
        ("what did we do", "what did we do"),  # nothing else left: searched as it is
    ],
)
def test_a_question_keeps_its_content_words(question: str, words: str) -> None:
    assert content_words(question) == words


def test_analysis_loads_without_the_rest_of_search() -> None:
    """Rule matching imports the analyzer alone: none of the index, its queries or ranking."""
    import subprocess
    import sys

    code = (
        "import sys, memstore.search.analysis\n"
        "print(sorted(m for m in sys.modules if m.startswith('memstore.search.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['memstore.search.analysis',", "'memstore.search.stubs']"]


@pytest.mark.parametrize(
    "text",
    [
        "The deployers deployed a Deployment of the API, x and y: 42 times!",
        "部署の手順 and 캐시 무효화 then การปรับใช้, Straße İstanbul ÉTÉ",
        "",
        "a an the of",
        "snake_case words_with_underscores and CamelCase",
    ],
)
def test_run_terms_are_the_analyzers_terms_at_their_positions(text: str) -> None:
    memo: dict[str, str | None] = {}
    for _ in range(2):  # and the same again from the memo
        found = [(t, pos) for pos, t in enumerate(run_terms(text, memo)) if t is not None]
        assert found == [(t.text, t.pos) for t in analyzer()(text, positions=True)]

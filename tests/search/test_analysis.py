"""The analyzer's words: which words of a question carry its content (pure)."""

from __future__ import annotations

import pytest

from memstore.search.analysis import content_words


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

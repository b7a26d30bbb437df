"""The credential detector against its corpus (`tests/secrets_corpus.py`): at least 95% of
the credential shapes refused, at most 1% of the benign technical texts refused."""

from __future__ import annotations

import pytest

from memstore.storage import secrets
from tests.secrets_corpus import BENIGN, CREDENTIALS

PATTERNS = secrets.compile_patterns()


def test_the_corpus_is_as_large_as_promised() -> None:
    assert len(CREDENTIALS) >= 60 and len(BENIGN) >= 200
    assert len({label for label, _ in CREDENTIALS}) == len(CREDENTIALS)
    assert len({label for label, _ in BENIGN}) == len(BENIGN)


def test_recall_and_false_positive_rate_meet_their_targets() -> None:
    missed = [label for label, text in CREDENTIALS if not secrets.scan({"t": text}, PATTERNS)]
    refused = [label for label, text in BENIGN if secrets.scan({"t": text}, PATTERNS)]
    recall = 1 - len(missed) / len(CREDENTIALS)
    false_positive = len(refused) / len(BENIGN)
    assert recall >= 0.95, f"recall {recall:.1%}; missed: {missed}"
    assert false_positive <= 0.01, f"false positives {false_positive:.1%}: {refused}"


@pytest.mark.parametrize(
    "text",
    [
        "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "ZQ3KE8",
        "DB_PASSWORD=" + "Xk9vTq2LmP",
        "redis://:" + "p4ss@h",
        "password: " + "$uperS3cret!x",
        "REDIS://:" + "p4ss@h",
    ],
    ids=["aws-secret", "db-password", "redis-url", "dollar-password", "upper-scheme"],
)
def test_the_issues_own_examples_are_refused(text: str) -> None:
    assert secrets.scan({"body": text}, PATTERNS)


def test_no_finding_shows_more_than_four_characters() -> None:
    for _, text in CREDENTIALS:
        assert all(len(f.excerpt) <= 4 for f in secrets.scan({"t": text}, PATTERNS))

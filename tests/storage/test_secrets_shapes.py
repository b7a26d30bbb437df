"""Credential shapes detect-secrets' own plugins lack (Hugging Face, Discord webhooks, Stripe
test keys), URL-encoded tokens, and what is public by design (AWS's documented example keys,
a Sentry DSN, a line detect-secrets' allow-list comment marks): through a real `memstore add`.
Every value is random, in the real shape."""

from __future__ import annotations

import os
import random
import string
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from memstore.storage.store import Store
from tests.conftest import git

ROOT = Path(__file__).resolve().parent.parent.parent
_rng = random.Random(7130)
ALNUM = string.ascii_letters + string.digits


def r(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


REFUSED = {
    "hugging face": "pulled the weights with " + "hf_" + r(34),
    "hugging face org": "the org token " + "api_org_" + r(34),
    "discord webhook": "alerts go to https://discord.com/api/webhooks/"
    + r(18, string.digits)
    + "/"
    + r(68, ALNUM + "-_"),
    "stripe test key": "stripe: " + "sk_test_" + r(24),
    "url-encoded github token": "callback?state="
    + urllib.parse.quote("ghp_" + r(36), safe="").replace("_", "%5F"),
    "url-encoded slack webhook": "https://ci.example.com/hook?to="
    + urllib.parse.quote(
        "https://hooks.slack.com/services/T" + r(8) + "/B" + r(10) + "/" + r(24), safe=""
    ),
}
PASSED = {
    "aws documented key id": "aws_access_key_id = " + "AKIA" + "IOSFODNN7EXAMPLE",
    "aws documented secret": "aws_secret_access_key = "
    + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"
    + "EXAMPLEKEY",
    "sentry dsn": "SENTRY_DSN=https://"
    + r(32, "0123456789abcdef")
    + "@o4504.ingest.sentry.io/45041",
    "allow-listed line": "ghp_" + r(36) + "  # pragma: allowlist secret",
}


def add(store: Store, name: str, body: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "--agent", "alice", "add"]
        + [name, "--type", "fact", "--description", "where the alerts go", "--body", body],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


@pytest.mark.parametrize("label", sorted(REFUSED))
def test_these_credential_shapes_are_refused(store: Store, label: str) -> None:
    before = git(store.root, "rev-parse", "HEAD")
    done = add(store, "alerts", REFUSED[label])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "looks like it holds a credential" in done.stderr
    assert git(store.root, "rev-parse", "HEAD") == before


@pytest.mark.parametrize("label", sorted(PASSED))
def test_public_and_allow_listed_values_pass(store: Store, label: str) -> None:
    done = add(store, "alerts", PASSED[label])
    assert done.returncode == 0, done.stderr

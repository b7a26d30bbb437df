"""Recall and false-positive rate of the credential detector over its corpus, precision and
recall over a held-out corpus generated afresh on each run, and what a scan costs.

The corpus is `tests/secrets_corpus.py`: credential shapes (fake, generated in the real
shapes) that must be refused, and benign technical texts that must pass; the detector was
tuned against it. The held-out corpus (`heldout` below) is not used by any test: random
values in the real shapes of credentials of many providers, written into the sentences and
config lines people write them in, and real-looking values that are not credentials (commit
ids, digests, UUIDs, public keys and DSNs, documented examples, placeholders); a new seed
each run (`--seed N` repeats one). The cost is that of scanning the fields of a typical
memory (description, a ~700-character body, two tags), the median of repeated runs, then the
one-off import of detect-secrets on a process's first scan.

    .venv/bin/python bench/secrets_corpus.py [--seed N] [--per-shape 6]
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import string
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore.storage import secrets  # noqa: E402
from tests.secrets_corpus import BENIGN, CREDENTIALS  # noqa: E402

REPEAT = 2000


ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
UPPER = string.ascii_uppercase + string.digits


def heldout(
    rng: random.Random, per_shape: int
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(credentials, benign): `per_shape` texts of each shape, each value random, each put
    in a context drawn at random."""

    def r(n: int, alphabet: str = ALNUM) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def digits(n: int) -> str:
        return str(rng.randint(1, 9)) + r(n - 1, string.digits)

    shapes: dict[str, Callable[[], str]] = {
        "github classic": lambda: "ghp_" + r(36),
        "github oauth": lambda: "gho_" + r(36),
        "github fine-grained": lambda: "github_pat_" + r(22) + "_" + r(59),
        "gitlab pat": lambda: "glpat-" + r(20, URLSAFE),
        "slack bot": lambda: f"xoxb-{digits(11)}-{digits(12)}-{r(24)}",
        "slack user": lambda: f"xoxp-{digits(11)}-{digits(12)}-{digits(12)}-{r(32, HEX)}",
        "slack webhook": lambda: (
            f"https://hooks.slack.com/services/T{r(8, UPPER)}/B{r(10, UPPER)}/{r(24)}"
        ),
        "discord webhook": lambda: (
            f"https://discord.com/api/webhooks/{digits(18)}/{r(68, URLSAFE)}"
        ),
        "discord bot": lambda: f"M{r(25, URLSAFE)}.{r(6, URLSAFE)}.{r(38, URLSAFE)}",
        "stripe live": lambda: "sk_live_" + r(99),
        "stripe test": lambda: "sk_test_" + r(rng.choice([24, 99])),
        "stripe restricted": lambda: "rk_live_" + r(24),
        "stripe webhook secret": lambda: "whsec_" + r(32),
        "aws key id": lambda: "AKIA" + r(16, UPPER),
        "aws secret": lambda: "aws_secret_access_key = " + r(40, B64),
        "google api key": lambda: "AIza" + r(35, URLSAFE),
        "openai project": lambda: "sk-proj-" + r(48, URLSAFE),
        "anthropic": lambda: "sk-ant-api03-" + r(93, URLSAFE) + "AA",
        "hugging face": lambda: "hf_" + r(34),
        "hugging face org": lambda: "api_org_" + r(34),
        "npm": lambda: "npm_" + r(36),
        "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + r(60, URLSAFE),
        "sendgrid": lambda: f"SG.{r(22, URLSAFE)}.{r(43, URLSAFE)}",
        "twilio": lambda: "SK" + r(32, HEX),
        "mailgun": lambda: "key-" + r(32, HEX),
        "shopify": lambda: "shpat_" + r(32, HEX),
        "digitalocean": lambda: "dop_v1_" + r(64, HEX),
        "databricks": lambda: "dapi" + r(32, HEX),
        "vault": lambda: "hvs." + r(90, URLSAFE),
        "telegram": lambda: f"{digits(10)}:AA{r(33, URLSAFE)}",
        "jwt": lambda: (
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
            + base64.urlsafe_b64encode(f'{{"sub":"{r(8)}","iat":{digits(10)}}}'.encode())
            .decode()
            .rstrip("=")
            + "."
            + r(43, URLSAFE)
        ),
        "password in url": lambda: f"postgres://app:{r(16)}@db.internal:5432/app",
        "url-encoded github": lambda: urllib.parse.quote("token=ghp_" + r(36), safe="").replace(
            "_", "%5F"
        ),
        "url-encoded slack webhook": lambda: (
            "https://ci.example.com/notify?to="
            + urllib.parse.quote(
                f"https://hooks.slack.com/services/T{r(8, UPPER)}/B{r(10, UPPER)}/{r(24)}", safe=""
            )
        ),
        "url-encoded stripe": lambda: (
            "key=" + urllib.parse.quote("sk_live_" + r(24)).replace("_", "%5F")
        ),
        "password assignment": lambda: "DB_PASSWORD=" + r(14, ALNUM + "!#%&"),
        "bearer header": lambda: "Authorization: Bearer " + r(40, URLSAFE),
    }
    contexts = [
        "{v}",
        "export TOKEN={v}",
        "the CI job failed until we set {v} in the runner",
        'config = {{"key": "{v}"}}',
        "curl -s https://api.example.com/v1/items -H 'X-Key: {v}'",
        "- rotated: {v} (old one revoked)",
    ]
    benign_shapes: dict[str, Callable[[], str]] = {
        "commit id": lambda: r(40, HEX),
        "short commit": lambda: r(10, HEX),
        "sha256 digest": lambda: "sha256:" + r(64, HEX),
        "npm integrity": lambda: "sha512-" + r(86, B64) + "==",
        "uuid": lambda: f"{r(8, HEX)}-{r(4, HEX)}-4{r(3, HEX)}-a{r(3, HEX)}-{r(12, HEX)}",
        "aws docs example key": lambda: "AKIA" + "IOSFODNN7" + "EXAMPLE",
        "aws docs example secret": lambda: "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
        "sentry dsn": lambda: f"https://{r(32, HEX)}@o{digits(6)}.ingest.sentry.io/{digits(7)}",
        "sentry dsn self-hosted": lambda: f"https://{r(32, HEX)}@sentry.example.com/{digits(2)}",
        "stripe publishable": lambda: "pk_live_" + r(24),
        "placeholder github": lambda: "ghp_" + "x" * 36,
        "placeholder env": lambda: "export GITHUB_TOKEN=${GITHUB_TOKEN}",
        "placeholder angle": lambda: "HF_TOKEN=<your hugging face token>",
        "ssh public key": lambda: (
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + r(43, B64) + " dev@laptop"
        ),
        "github commit url": lambda: f"https://github.com/acme/api/commit/{r(40, HEX)}",
        "docker image digest": lambda: f"ghcr.io/acme/api@sha256:{r(64, HEX)}",
        "k8s secret ref": lambda: "secretKeyRef: {name: api-token, key: token}",
        "base64 png": lambda: "data:image/png;base64,iVBORw0KGgo" + r(80, B64),
        "version and date": lambda: (
            f"released v{rng.randint(1, 9)}.{rng.randint(0, 30)} on 2026-0{rng.randint(1, 9)}-12"
        ),
        "slack channel id": lambda: "post in C0" + r(9, UPPER) + " when done",
        "allow-listed test key": lambda: "ghp_" + r(36) + "  # pragma: allowlist secret",
        "hf model id": lambda: "model: sentence-transformers/all-MiniLM-L6-v2",
        "token count": lambda: f"max_tokens: {rng.randint(100, 9000)}",
        "prose about keys": lambda: "Stripe test keys start sk_test_ and never touch real money.",
    }
    credentials = [
        (f"{name} #{i}", rng.choice(contexts).format(v=make()))
        for name, make in shapes.items()
        for i in range(per_shape)
    ]
    # A benign value in a sentence that names no secret: `export TOKEN=<commit id>` would be
    # a credential's context, and refusing it right.
    plain = [
        "{v}",
        "deployed {v} to staging",
        "see {v} for the details",
        "- fixed in {v}",
        "the runbook says: {v}",
    ]
    benign = [
        (f"{name} #{i}", rng.choice(plain).format(v=make()))
        for name, make in benign_shapes.items()
        for i in range(per_shape)
    ]
    return credentials, benign


def _measure(
    patterns: secrets.Patterns, credentials: list[tuple[str, str]], benign: list[tuple[str, str]]
) -> tuple[list[str], list[str]]:
    missed = [label for label, text in credentials if not secrets.scan({"t": text}, patterns)]
    refused = [label for label, text in benign if secrets.scan({"t": text}, patterns)]
    return missed, refused


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--per-shape", type=int, default=6)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    patterns = secrets.compile_patterns()
    held_credentials, held_benign = heldout(random.Random(seed), args.per_shape)
    missed, refused = _measure(patterns, held_credentials, held_benign)
    caught = len(held_credentials) - len(missed)
    precision = caught / (caught + len(refused)) if caught + len(refused) else 1.0
    print(
        f"held-out corpus (seed {seed}): {len(held_credentials)} credentials, "
        f"{len(held_benign)} benign"
    )
    print(f"  recall {caught}/{len(held_credentials)} = {caught / len(held_credentials):.1%}")
    print(f"  precision {caught}/{caught + len(refused)} = {precision:.1%}")
    print(f"  benign refused {len(refused)}/{len(held_benign)}")
    for label in sorted({m.split(" #")[0] for m in missed}):
        print(f"  missed: {label} ({sum(1 for m in missed if m.startswith(label + ' #'))})")
    for label in sorted({m.split(" #")[0] for m in refused}):
        print(f"  refused: {label} ({sum(1 for m in refused if m.startswith(label + ' #'))})")
    missed = [label for label, text in CREDENTIALS if not secrets.scan({"t": text}, patterns)]
    refused = [label for label, text in BENIGN if secrets.scan({"t": text}, patterns)]
    caught = len(CREDENTIALS) - len(missed)
    print(f"credentials refused: {caught}/{len(CREDENTIALS)} = {caught / len(CREDENTIALS):.1%}")
    for label in missed:
        print(f"  missed: {label}")
    print(f"benign refused:      {len(refused)}/{len(BENIGN)} = {len(refused) / len(BENIGN):.1%}")
    for label in refused:
        print(f"  refused: {label}")

    body = dict(BENIGN)["memory body x3"]
    fields = {
        "description": "Validate API input with zod schemas",
        "body": body,
        "tags": ["api", "validation"],
    }
    times: list[float] = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        secrets.scan(fields, patterns)
        times.append(time.perf_counter() - start)
    print(
        f"scan of a typical memory ({len(body)}-character body): "
        f"median {statistics.median(times) * 1e6:.0f} µs, "
        f"p90 {statistics.quantiles(times, n=10)[-1] * 1e6:.0f} µs, "
        f"fastest {min(times) * 1e6:.0f} µs (the cost on an idle core)"
    )
    code = (
        "import time; t = time.perf_counter()\n"
        "from memstore.storage import secrets; secrets.scan({'t': 'x'})\n"
        "print((time.perf_counter() - t) * 1000)"
    )
    firsts = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(5)
    ]
    print(
        "first scan in a process (imports detect-secrets): "
        f"median {statistics.median(firsts):.0f} ms"
    )


if __name__ == "__main__":
    main()

"""The paraphrase bank (tests/data/check_bank.yaml) through a real store's `check`: risky actions
said many ways must warn or block, benign look-alikes must be allowed (issue 12's targets)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from memstore.storage.store import Store
from memstore.workflow.rules.rules import Verdict
from memstore.workflow.session import agent as session
from tests.conftest import DATA, as_agent, commit_settings

BANKS: dict[str, dict[str, Any]] = {
    path.name: yaml.safe_load(path.read_text(encoding="utf-8"))
    for path in sorted(DATA.glob("check_bank*.yaml"))
}
"""The first bank, and the banks written later (each measured before any change for it)."""
BANK = BANKS["check_bank.yaml"]


@pytest.fixture
def bank_store(store: Store) -> Store:
    """A store holding the bank's rules, confirmed by someone other than their author."""
    for rule in BANK["rules"]:
        session.correct(
            store,
            rule["name"],
            type=rule["type"],
            severity=rule["severity"],
            applies_when=rule["applies_when"],
            description=rule["description"],
        )
        as_agent(store, "bob").confirm(rule["name"], "agreed")
    return store


def flagged(store: Store, texts: list[str]) -> list[str]:
    return [t for t in texts if session.check(store, t).verdict is not Verdict.ALLOW]


def test_every_bank_holds_the_same_rules() -> None:
    assert all(bank["rules"] == BANK["rules"] for bank in BANKS.values())


def test_the_bank_is_big_enough_to_measure() -> None:
    assert len(BANK["risky"]) >= 40 and len(BANK["benign"]) >= 40


@pytest.mark.parametrize("name", BANKS)
def test_at_least_95_percent_of_risky_paraphrases_warn_or_block(
    bank_store: Store, name: str
) -> None:
    risky: list[str] = BANKS[name]["risky"]
    caught = flagged(bank_store, risky)
    missed = [t for t in risky if t not in caught]
    assert len(caught) / len(risky) >= 0.95, missed


@pytest.mark.parametrize("name", BANKS)
def test_at_most_5_percent_of_benign_look_alikes_warn_or_block(
    bank_store: Store, name: str
) -> None:
    benign: list[str] = BANKS[name]["benign"]
    wrong = flagged(bank_store, benign)
    assert len(wrong) / len(benign) <= 0.05, wrong


def test_with_guards_off_only_the_rules_act(bank_store: Store) -> None:
    commit_settings(bank_store.root, "guards: false\n")
    assert session.check(bank_store, "terraform destroy -auto-approve").verdict is Verdict.ALLOW
    assert session.check(bank_store, "ship 1.4.1 to the npm registry").verdict is Verdict.BLOCK

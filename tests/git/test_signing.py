"""Signed identities: memstore signs its commits as `git commit -S` does with SSH keys, and
`signing.signers` says whose allowed key signed each commit. Real keys from ssh-keygen."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import GitError, InvalidMemory, SigningError
from memstore.faces.cli.main import main
from memstore.git import refs, signing
from memstore.model.identity import same_identity
from memstore.storage.store import Store
from memstore.workflow.care import lint
from tests.conftest import GIT_ENV, as_agent, git


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An ed25519 key pair each for alice, bob and eve: name → private key path."""
    folder = tmp_path_factory.mktemp("keys")
    found: dict[str, Path] = {}
    for name in ("alice", "bob", "eve"):
        path = folder / name
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)],
            check=True,
        )
        found[name] = path
    return found


def allow(keys: dict[str, Path], *names: str) -> str:
    return "".join(
        signing.allowed_line(n, Path(f"{keys[n]}.pub").read_text(encoding="utf-8")) + "\n"
        for n in names
    )


def commit_file(root: Path, rel: str, text: str, message: str = "settings") -> None:
    (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", rel)
    git(root, "commit", "-q", "-m", message)


def head(store: Store) -> str:
    sha = refs.head(store.repo)
    assert sha is not None
    return sha


def whose(store: Store, *shas: str) -> list[str | None]:
    found = signing.signers(store.repo, list(shas), store.allowed_signers)
    return [found[s] for s in shas]


@pytest.fixture
def signed_store(store: Store, keys: dict[str, Path]) -> Store:
    """The store with alice and bob as allowed signers, committed by a human."""
    commit_file(store.root, "allowed_signers", allow(keys, "alice", "bob"))
    return store


def as_signer(store: Store, agent: str, key: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("MEMSTORE_SIGNING_KEY", str(key))
    return as_agent(store, agent)


def test_a_memstore_write_with_a_signing_key_passes_git_verify_commit(
    signed_store: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = as_signer(signed_store, "alice", keys["alice"], monkeypatch)
    alice.add("use-zod", type="decision", description="Validate input with zod")
    allowed = f"gpg.ssh.allowedSignersFile={alice.allowed_signers}"
    out = subprocess.run(
        ["git", "-c", allowed, "verify-commit", "-v", "HEAD"],
        cwd=alice.root,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert 'Good "git" signature for alice' in out.stderr
    assert whose(alice, head(alice)) == ["alice"]
    assert git(alice.root, "status", "--porcelain") == ""


def test_alices_key_cannot_make_a_commit_that_passes_as_bobs_confirmation(
    signed_store: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = as_signer(signed_store, "alice", keys["alice"], monkeypatch)
    alice.add("use-zod", type="decision", description="Validate input with zod")
    added = head(alice)
    forged = as_signer(alice, "bob", keys["alice"], monkeypatch)  # bob's name, alice's key
    forged.confirm("use-zod", "looks right")
    confirm = head(forged)
    assert git(forged.root, "log", "-1", "--format=%an", confirm).strip() == "bob"
    assert whose(forged, added, confirm) == ["alice", "alice"]
    assert not same_identity(whose(forged, confirm)[0], "bob")


def test_bobs_own_key_makes_his_confirmation_his(
    signed_store: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = as_signer(signed_store, "alice", keys["alice"], monkeypatch)
    alice.add("use-zod", type="decision", description="Validate input with zod")
    bob = as_signer(alice, "Bob", keys["bob"], monkeypatch)
    bob.confirm("use-zod", "verified")
    principal = whose(bob, head(bob))[0]
    assert principal == "bob" and same_identity(principal, "Bob")


def test_an_unsigned_commit_is_nobodys(signed_store: Store) -> None:
    signed_store.add("use-zod", type="decision", description="Validate input with zod")
    assert whose(signed_store, head(signed_store)) == [None]


def test_a_key_not_in_the_allowed_signers_is_nobodys(
    signed_store: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    eve = as_signer(signed_store, "bob", keys["eve"], monkeypatch)
    eve.add("use-zod", type="decision", description="Validate input with zod")
    assert whose(eve, head(eve)) == [None]


def human_signed_commit(root: Path, author: str, key: Path, message: str) -> str:
    """A commit made by `git commit -S` with git's own SSH signing."""
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": author, "GIT_COMMITTER_NAME": author}
    subprocess.run(
        ["git", "-c", "gpg.format=ssh", "-c", f"user.signingkey={key}"]
        + ["commit", "-q", "-S", "--allow-empty", "-m", message],
        cwd=root,
        env=env,
        check=True,
    )
    return git(root, "rev-parse", "HEAD").strip()


def test_a_humans_git_commit_with_ssh_signing_is_accepted(
    signed_store: Store, keys: dict[str, Path]
) -> None:
    sha = human_signed_commit(signed_store.root, "bob", keys["bob"], "by hand")
    assert whose(signed_store, sha) == ["bob"]


def test_a_key_added_in_the_commit_it_signs_vouches_for_nothing(
    signed_store: Store, keys: dict[str, Path]
) -> None:
    root = signed_store.root
    (root / "allowed_signers").write_text(allow(keys, "alice", "bob") + allow(keys, "eve"))
    git(root, "add", "allowed_signers")
    sha = human_signed_commit(root, "eve", keys["eve"], "let eve in, signed by eve")
    later = human_signed_commit(root, "eve", keys["eve"], "eve, now allowed")
    assert whose(signed_store, sha, later) == [None, "eve"]


def test_a_key_removed_at_head_no_longer_vouches_for_old_commits(
    signed_store: Store, keys: dict[str, Path]
) -> None:
    old = human_signed_commit(signed_store.root, "bob", keys["bob"], "before")
    commit_file(signed_store.root, "allowed_signers", allow(keys, "alice"), "revoke bob")
    assert whose(signed_store, old) == [None]


def test_signers_answers_for_many_commits_in_one_call(
    signed_store: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = as_signer(signed_store, "alice", keys["alice"], monkeypatch)
    made: list[str] = []
    for i in range(5):
        alice.add(f"note-{i}", type="fact", description=f"Fact {i}")
        made.append(head(alice))
    monkeypatch.delenv("MEMSTORE_SIGNING_KEY")
    unsigned = as_agent(signed_store, "carol")
    unsigned.add("note-x", type="fact", description="Unsigned")
    made.append(head(unsigned))
    assert whose(alice, *made) == ["alice"] * 5 + [None]


def test_no_allowed_signers_file_means_every_commit_is_nobodys(
    store: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = as_signer(store, "alice", keys["alice"], monkeypatch)
    alice.add("use-zod", type="decision", description="Validate input with zod")
    assert whose(alice, head(alice)) == [None]
    assert signing.signers(alice.repo, [], alice.allowed_signers) == {}


@pytest.mark.parametrize("bad", ["HEAD", "-p", "abc123", "z" * 40])
def test_signers_refuses_anything_but_a_full_sha(store: Store, bad: str) -> None:
    with pytest.raises(GitError, match="not a full commit id"):
        signing.signers(store.repo, [bad], store.allowed_signers)


def test_signers_names_a_commit_the_repository_lacks(signed_store: Store) -> None:
    with pytest.raises(GitError, match="git log failed"):
        signing.signers(signed_store.repo, ["1" * 40], signed_store.allowed_signers)


# -- requiring signatures ---------------------------------------------------------------------


def requiring(store: Store, agent: str = "alice") -> Store:
    commit_file(store.root, "memstore.yaml", "require_signatures: true\n")
    return as_agent(store, agent)


def test_a_write_with_signatures_required_and_no_key_is_refused_and_changes_nothing(
    signed_store: Store,
) -> None:
    store = requiring(signed_store)
    before = head(store)
    with pytest.raises(SigningError, match="requires signed commits.*MEMSTORE_SIGNING_KEY"):
        store.add("use-zod", type="decision", description="Validate input with zod")
    assert head(store) == before
    assert not (store.root / "decision" / "use-zod.md").exists()
    assert git(store.root, "status", "--porcelain") == ""


def test_a_key_that_cannot_sign_refuses_the_write_and_changes_nothing(
    signed_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "not-a-key").write_text("hello\n", encoding="utf-8")
    store = as_signer(requiring(signed_store), "alice", tmp_path / "not-a-key", monkeypatch)
    before = head(store)
    with pytest.raises(SigningError, match="ssh-keygen could not sign"):
        store.add("use-zod", type="decision", description="Validate input with zod")
    assert head(store) == before
    assert git(store.root, "status", "--porcelain") == ""
    assert not (store.cache / "pending.json").exists()


def test_a_signing_key_that_is_not_a_file_is_named(
    signed_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = as_signer(signed_store, "alice", tmp_path / "missing", monkeypatch)
    with pytest.raises(SigningError, match="MEMSTORE_SIGNING_KEY names .*missing, which is not"):
        store.add("use-zod", type="decision", description="Validate input with zod")


def test_signatures_required_fall_back_to_gits_ssh_signing_key(
    signed_store: Store, keys: dict[str, Path]
) -> None:
    store = requiring(signed_store)
    git(store.root, "config", "gpg.format", "ssh")
    git(store.root, "config", "user.signingkey", str(keys["alice"]))
    store.add("use-zod", type="decision", description="Validate input with zod")
    assert whose(store, head(store)) == ["alice"]


def test_an_openpgp_signing_key_is_not_taken_for_an_ssh_one(
    signed_store: Store, keys: dict[str, Path]
) -> None:
    store = requiring(signed_store)
    git(store.root, "config", "user.signingkey", str(keys["alice"]))  # gpg.format unset
    with pytest.raises(SigningError, match="no signing key is set"):
        store.add("use-zod", type="decision", description="Validate input with zod")


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("require_signatures: yes please\n", "'require_signatures' must be true or false"),
        ("allowed_signers: ../outside\n", "'allowed_signers' must be a file path inside"),
        ("allowed_signers: .memstore/keys\n", "'allowed_signers' must be a file path inside"),
        ("allowed_signers: [a]\n", "'allowed_signers' must be a file path inside"),
    ],
)
def test_bad_signature_settings_are_named(store: Store, yaml: str, message: str) -> None:
    (store.root / "memstore.yaml").write_text(yaml, encoding="utf-8")
    with pytest.raises(InvalidMemory, match=message):
        Store(store.root, agent="alice")


def test_the_allowed_signers_file_can_live_elsewhere_in_the_store(
    store: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    (store.root / "keys").mkdir()
    commit_file(store.root, "keys/signers", allow(keys, "alice"))
    commit_file(store.root, "memstore.yaml", "allowed_signers: keys/signers\n")
    alice = as_signer(store, "alice", keys["alice"], monkeypatch)
    assert alice.allowed_signers == store.root / "keys" / "signers"
    alice.add("use-zod", type="decision", description="Validate input with zod")
    assert whose(alice, head(alice)) == ["alice"]


# -- the allowed-signers file -----------------------------------------------------------------


def test_a_key_allowed_for_two_identities_is_allowed_for_neither(keys: dict[str, Path]) -> None:
    shared = allow(keys, "alice").replace("alice ", "bob ", 1)
    usable, problems = signing.read_allowed(allow(keys, "alice") + shared + allow(keys, "eve"))
    assert [k.identity for k in usable] == ["eve"]
    assert len(problems) == 1 and "allowed for alice, bob" in problems[0]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "* ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM459L7ENXo7du2eh2WzX4HloIphNprqww1S05c32MUN",
            "pattern",
        ),
        (
            "alice,bob ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM459L7ENXo7du2eh2WzX4HloIphNprqww1S05c",
            "several identities",
        ),
        (
            "alice cert-authority ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM459L7ENXo7du2eh2WzX4Hlo",
            "certificate authorities",
        ),
        ("alice ssh-ed25519 not*base64", "expected"),
        ("alice", "expected"),
    ],
)
def test_unusable_allowed_signers_lines_are_named(line: str, message: str) -> None:
    usable, problems = signing.read_allowed(f"# team keys\n\n{line}\n")
    assert usable == []
    assert len(problems) == 1 and problems[0].startswith("line 3: ") and message in problems[0]


def test_allowed_line_takes_a_public_key_and_refuses_a_private_one(keys: dict[str, Path]) -> None:
    public = Path(f"{keys['alice']}.pub").read_text(encoding="utf-8")
    line = signing.allowed_line("alice", public)
    assert line == "alice " + " ".join(public.split()[:2])
    with pytest.raises(InvalidMemory, match="not a private key"):
        signing.allowed_line("alice", keys["alice"].read_text(encoding="utf-8"))
    with pytest.raises(InvalidMemory, match="cannot be an allowed signer"):
        signing.allowed_line("Alice Smith", public)


# -- the signers commands ---------------------------------------------------------------------


def cli(*args: str, agent: str = "alice") -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--agent", agent, *args])
    return result.exit_code, result.output


def test_signers_add_commits_the_key_and_a_signed_write_then_passes(
    store: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = cli("signers", "add", "alice", f"{keys['alice']}.pub")
    assert code == 0 and out.startswith("allowed alice to sign with SHA256:"), out
    assert cli("signers", "add", "alice", f"{keys['alice']}.pub") == (0, "already allowed: alice\n")
    assert git(store.root, "log", "-1", "--format=%an %s").startswith(
        "alice memory: allow signer alice — SHA256:"
    )
    assert git(store.root, "status", "--porcelain") == ""
    code, out = cli("signers", "list")
    assert code == 0 and out.startswith("alice ") and "SHA256:" in out
    alice = as_signer(store, "alice", keys["alice"], monkeypatch)
    alice.add("use-zod", type="decision", description="Validate input with zod")
    assert whose(alice, head(alice)) == ["alice"]


def test_signers_add_refuses_a_key_another_identity_has_and_changes_nothing(
    store: Store, keys: dict[str, Path]
) -> None:
    assert cli("signers", "add", "alice", f"{keys['alice']}.pub")[0] == 0
    before = head(store)
    code, out = cli("signers", "add", "bob", f"{keys['alice']}.pub")
    assert code == 1 and "is already allowed for alice; a key belongs to one identity" in out
    assert head(store) == before


@pytest.mark.parametrize("which", ["private", "missing"])
def test_signers_add_refuses_what_is_not_a_public_key(
    store: Store, keys: dict[str, Path], tmp_path: Path, which: str
) -> None:
    path = keys["alice"] if which == "private" else tmp_path / "nope.pub"
    before = head(store)
    code, out = cli("signers", "add", "alice", str(path))
    assert code == 1 and out.startswith("Error: ") and out.count("\n") == 1, out
    assert head(store) == before
    assert not (store.root / "allowed_signers").exists()


def test_signers_list_names_unusable_lines_and_exits_1(store: Store) -> None:
    (store.root / "allowed_signers").write_text("* ssh-ed25519 AAAA\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["signers", "list"])
    assert result.exit_code == 1
    assert "problem: line 1: principal '*' is a pattern" in result.stderr


# -- lint and reads with signatures required -----------------------------------------------------


@pytest.fixture
def required(store: Store, keys: dict[str, Path]) -> Store:
    """alice and bob allowed to sign, signatures required, alice's memory signed by her key."""
    commit_file(store.root, "allowed_signers", allow(keys, "alice", "bob"))
    commit_file(store.root, "memstore.yaml", "require_signatures: true\n")
    os.environ["MEMSTORE_SIGNING_KEY"] = str(keys["alice"])
    try:
        Store(store.root, agent="alice").add("plan", type="fact", description="The plan")
    finally:
        del os.environ["MEMSTORE_SIGNING_KEY"]
    return Store(store.root, agent="carol")


def hand_confirm(store: Store, as_name: str, key: Path | None) -> None:
    """Confirm `plan` by hand in `as_name`'s name, signing with `key` (or not at all)."""
    path = store.root / "fact" / "plan.md"
    text = path.read_text("utf-8").replace("status: draft", "status: confirmed")
    path.write_text(text.replace("tags: []", f"tags: []\nconfirmed_by: {as_name}"), "utf-8")
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": as_name, "GIT_COMMITTER_NAME": as_name}
    sign = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={key}"] if key else []
    subprocess.run(["git", "add", "-A"], cwd=store.root, env=env, check=True)
    subprocess.run(
        ["git", *sign, "commit", "-q", *(["-S"] if key else []), "-m", "confirm plan"],
        cwd=store.root,
        env=env,
        check=True,
    )


def test_with_signatures_required_a_confirmation_signed_by_its_confirmer_counts(
    required: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_signer(required, "bob", keys["bob"], monkeypatch).confirm("plan", "read it")
    monkeypatch.delenv("MEMSTORE_SIGNING_KEY")
    assert [str(p) for p in lint.lint_store(required)] == []
    assert Store(required.root, agent="carol").get("plan").status == "confirmed"


def test_alices_key_cannot_make_a_confirmation_that_passes_as_bobs(
    required: Store, keys: dict[str, Path]
) -> None:
    hand_confirm(required, "bob", keys["alice"])  # bob's name, alice's key
    found = [str(p) for p in lint.lint_store(required)]
    assert any("plan" in p and "signed by 'alice'" in p for p in found), found
    assert Store(required.root, agent="carol").get("plan").status == "unverified"


def test_an_unsigned_confirmation_does_not_count_when_signatures_are_required(
    required: Store,
) -> None:
    hand_confirm(required, "bob", None)
    found = [str(p) for p in lint.lint_store(required)]
    assert any("plan" in p and "no allowed signature" in p for p in found), found
    assert Store(required.root, agent="carol").get("plan").status == "unverified"


def test_with_signatures_required_a_ledger_line_counts_only_when_its_actor_signed_it(
    required: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.model import when
    from memstore.workflow.ledger import book as ledger_io
    from memstore.workflow.ledger import lines as ledger

    bob = as_signer(required, "bob", keys["bob"], monkeypatch)
    ledger_io.claim(bob, "deploy", "v1")
    monkeypatch.delenv("MEMSTORE_SIGNING_KEY")
    assert ledger_io.check(required, "deploy", "v1").state == "IN_PROGRESS"
    # alice writes a correctly hashed release in bob's name and commits it as bob, signed
    # with her own key: it must not free the claim.
    event = ledger.new_event(
        actor="bob",
        action="deploy",
        target="v1",
        status=ledger.RELEASED,
        at=when.utcnow(),
        prev=ledger_io.view(required).heads,
    )
    with required.ledger_path.open("a", encoding="utf-8", newline="\n") as f:
        f.write(ledger.render(event) + "\n")
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": "bob", "GIT_COMMITTER_NAME": "bob"}
    sign = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={keys['alice']}"]
    subprocess.run(["git", "add", "ledger.jsonl"], cwd=required.root, env=env, check=True)
    subprocess.run(
        ["git", *sign, "commit", "-q", "-S", "-m", "release"],
        cwd=required.root,
        env=env,
        check=True,
    )
    fresh = Store(required.root, agent="carol")
    assert ledger_io.check(fresh, "deploy", "v1").state == "IN_PROGRESS"
    assert not ledger_io.verify(fresh).ok


# -- a key that is not allowed is refused before the commit exists -------------------------------


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("eve", "allowed_signers as committed does not list it for 'bob'"),
        ("alice", "that key is allowed for alice, not for 'bob'"),
    ],
)
def test_a_confirmation_signed_with_a_key_not_allowed_for_its_confirmer_is_refused(
    required: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch, key: str, why: str
) -> None:
    before = head(required)
    path = required.root / "fact" / "plan.md"
    text = path.read_bytes()
    bob = as_signer(required, "bob", keys[key], monkeypatch)
    with pytest.raises(SigningError, match="is not an allowed signer for 'bob'") as caught:
        bob.confirm("plan", "read it")
    assert why in str(caught.value)
    assert head(required) == before and path.read_bytes() == text
    assert git(required.root, "status", "--porcelain") == ""
    code, out = cli("confirm", "plan", "--reason", "read it", agent="bob")
    assert code == 1 and out.startswith("Error: refused: ") and out.count("\n") == 1, out
    assert "[confirmed]" not in out and head(required) == before


def test_a_key_revoked_at_head_refuses_the_next_write_of_a_running_process(
    required: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    bob = as_signer(required, "bob", keys["bob"], monkeypatch)
    bob.add("first", type="fact", description="bob's key is allowed")
    commit_file(required.root, "allowed_signers", allow(keys, "alice"), "revoke bob")
    with pytest.raises(SigningError, match="does not list it for 'bob'"):
        bob.add("second", type="fact", description="bob's key is no longer allowed")


def test_an_allowed_signer_may_add_another_identitys_key_in_a_signing_store(
    required: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTORE_SIGNING_KEY", str(keys["alice"]))
    assert cli("signers", "add", "eve", f"{keys['eve']}.pub", agent="alice")[0] == 0
    eve = as_signer(required, "eve", keys["eve"], monkeypatch)
    eve.confirm("plan", "read it")
    assert whose(eve, head(eve)) == ["eve"]


# -- what the verdicts depend on: a change of it reaches cached reads ---------------------------


def test_revoking_a_key_reaches_the_cached_reads(
    required: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_signer(required, "bob", keys["bob"], monkeypatch).confirm("plan", "read it")
    monkeypatch.delenv("MEMSTORE_SIGNING_KEY")
    carol = Store(required.root, agent="carol")  # a running server's store
    assert carol.get("plan").status == "confirmed"
    assert Store(required.root, agent="carol").get("plan").status == "confirmed"  # kept on disk
    commit_file(required.root, "allowed_signers", allow(keys, "alice"), "revoke bob")
    assert carol.get("plan").status == "unverified"
    assert Store(required.root, agent="carol").get("plan").status == "unverified"
    code, out = cli("list", agent="carol")
    assert code == 0 and "unverified" in out and "confirmed" not in out.replace("unverified", "")


def test_requiring_signatures_reaches_the_cached_reads_of_a_running_process(
    store: Store, keys: dict[str, Path]
) -> None:
    commit_file(store.root, "allowed_signers", allow(keys, "alice", "bob"))
    store.add("plan", type="fact", description="The plan")
    as_agent(store, "bob").confirm("plan", "read it")  # unsigned
    carol = Store(store.root, agent="carol")
    assert carol.get("plan").status == "confirmed"
    commit_file(store.root, "memstore.yaml", "require_signatures: true\n")
    assert carol.get("plan").status == "unverified"
    assert carol.signed


def test_revoking_a_key_reaches_the_ledgers_cached_history(
    required: Store, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.workflow.ledger import book as ledger_io

    ledger_io.claim(as_signer(required, "bob", keys["bob"], monkeypatch), "deploy", "v1")
    monkeypatch.delenv("MEMSTORE_SIGNING_KEY")
    assert ledger_io.verify(Store(required.root, agent="carol")).ok  # the history is cached
    commit_file(required.root, "allowed_signers", allow(keys, "alice"), "revoke bob")
    assert not ledger_io.verify(Store(required.root, agent="carol")).ok


@pytest.mark.anyio
async def test_mcp_refuses_a_confirmation_signed_with_a_key_not_allowed(
    required: Store, keys: dict[str, Path]
) -> None:
    from tests.mcp_client import serve, text

    before = head(required)
    env = {"MEMSTORE_SIGNING_KEY": str(keys["eve"])}
    async with serve(required.root, "bob", env=env) as client:
        result = await client.call_tool(
            "memory_promote", {"name": "plan", "to": "confirmed", "reason": "read it"}
        )
    assert result.is_error and "is not an allowed signer for 'bob'" in text(result)
    assert "[confirmed]" not in text(result)
    assert head(required) == before
    assert git(required.root, "status", "--porcelain") == ""

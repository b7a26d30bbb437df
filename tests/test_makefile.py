"""`make test`'s browser install says one line, whatever apt-get prints, and all of it when it
fails. apt-get cannot run here (it changes the system), so a stand-in on PATH prints what a
real install prints: a few hundred lines of package names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO

APT_GET = """#!/bin/sh
echo "apt-get $*" >> "${0%/*}/calls"
i=0
while [ $i -lt 530 ]; do echo "Selecting previously unselected package lib$i."; i=$((i+1)); done
[ "$1" = update ] && exit 0
exit "${FAKE_APT_STATUS:-0}"
"""


def _chromium(tmp_path: Path, status: int) -> subprocess.CompletedProcess[str]:
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "apt-get").write_text(APT_GET, encoding="utf-8")
    (tools / "id").write_text("#!/bin/sh\necho 0\n", encoding="utf-8")  # as root
    for fake in ("apt-get", "id"):
        (tools / fake).chmod(0o755)
    for real in ("tail", "mkdir"):
        found = shutil.which(real)
        assert found is not None
        (tools / real).symlink_to(found)
    make = shutil.which("make")
    assert make is not None
    return subprocess.run(
        [make, "-s", "-C", str(REPO), "chromium", f"VENV={tmp_path / 'venv'}"],
        capture_output=True,
        text=True,
        # No chromium on this PATH: the recipe installs it.
        env={"PATH": str(tools), "FAKE_APT_STATUS": str(status), "HOME": str(tmp_path)},
        timeout=60,
    )


def test_the_browser_install_says_one_line(tmp_path: Path) -> None:
    done = _chromium(tmp_path, 0)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"installing chromium for the browser tests (apt-get; its output: "
        f"{tmp_path / 'venv' / 'chromium-install.log'})"
    ]
    # The package lists are left alone when the install can go without refreshing them.
    calls = (tmp_path / "bin" / "calls").read_text(encoding="utf-8").splitlines()
    assert len(calls) == 1 and calls[0].startswith("apt-get install")
    assert "APT::Keep-Downloaded-Packages=true" in calls[0]


def test_a_failed_browser_install_shows_the_end_of_apt_gets_output(tmp_path: Path) -> None:
    done = _chromium(tmp_path, 100)
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert "Selecting previously unselected package lib529." in lines
    assert any("installing chromium failed: see" in line for line in lines)
    assert len(lines) < 30
    calls = (tmp_path / "bin" / "calls").read_text(encoding="utf-8").splitlines()
    assert [c.split()[1] for c in calls] == ["install", "update", "install"]
    assert os.path.getsize(tmp_path / "venv" / "chromium-install.log") > 10_000

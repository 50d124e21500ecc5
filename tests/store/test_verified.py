"""DuckDB checks an extension file's signature once per installed file, and a file that
fails the check is never loaded (``_verified.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit import StoreError
from evalkit._extensions import ducklake_missing, extension_file
from evalkit._verified_extensions import verdicts_file, verify_extension

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def copy_of_ducklake(folder: Path) -> Path:
    folder.mkdir()
    return Path(shutil.copy(extension_file("ducklake"), folder / "ducklake.duckdb_extension"))


def test_a_checked_file_is_kept_under_its_identity_and_a_changed_one_is_checked_again(
    cache: Path, tmp_path: Path
) -> None:
    copy = copy_of_ducklake(tmp_path / "ext")
    verify_extension(copy)
    kept = json.loads(verdicts_file().read_text())
    assert list(kept) == [str(copy.resolve())]
    # Changed in place (one byte in the middle): a new identity, so checked again, and refused.
    with copy.open("r+b") as file:
        file.seek(copy.stat().st_size // 2)
        byte = file.read(1)
        file.seek(-1, 1)
        file.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(StoreError, match=r"ducklake\.duckdb_extension: DuckDB refused this"):
        verify_extension(copy)
    assert json.loads(verdicts_file().read_text()) == kept  # the refusal is not kept


def test_a_file_with_a_bad_signature_is_refused_and_its_refusal_not_kept(
    cache: Path, tmp_path: Path
) -> None:
    copy = copy_of_ducklake(tmp_path / "ext")
    copy.write_bytes(copy.read_bytes()[:-512] + bytes(512))  # its signature block zeroed
    with pytest.raises(StoreError, match="DuckDB refused this extension file"):
        verify_extension(copy)
    assert not verdicts_file().exists()


def test_opening_a_lake_keeps_the_verdict_on_each_extension_file_it_loads(
    cache: Path, tmp_path: Path
) -> None:
    store = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    code = (
        "import sys\nfrom evalkit.store import connection\n"
        "with connection(sys.argv[1]) as con: con.execute('SELECT 1').fetchall()"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code, store], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    kept = json.loads(verdicts_file().read_text())
    assert {Path(p).name for p in kept} == {"ducklake.duckdb_extension", "sqlite.duckdb_extension"}

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit import ConfigError, ExperimentFileError, load_experiment_file
from evalkit.experiment_file._imports import import_reference


@pytest.fixture(autouse=True)
def restore_import_state() -> Iterator[None]:
    # The imported modules stay in sys.modules on purpose; tests must not leak them.
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


def experiment(folder: Path, use: str) -> Path:
    (folder / "qa.parquet").touch()
    path = folder / "experiment.toml"
    path.write_text(
        f'[experiment]\nname = "x"\ndataset = "qa.parquet"\n\n[[scorers]]\nuse = "{use}"\n'
    )
    return path


def test_a_module_beside_the_experiment_file_is_imported(tmp_path: Path) -> None:
    module = f"my_scorers_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text("class Tone:\n    scale = 5\n\ntone = Tone()\n")
    loaded = load_experiment_file(experiment(tmp_path, f"{module}:tone"))
    tone = loaded.import_object(("scorers", 0, "use"), loaded.config.scorers[0].use)
    assert type(tone).__name__ == "Tone"
    assert loaded.import_object(("scorers", 0, "use"), f"{module}:Tone.scale") == 5
    assert str(tmp_path) not in sys.path
    assert module in sys.modules


def test_a_missing_attribute_names_the_key_its_line_and_a_close_name(tmp_path: Path) -> None:
    module = f"my_scorers_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text("tone = 1\n")
    path = experiment(tmp_path, f"{module}:tonne")
    loaded = load_experiment_file(path)
    with pytest.raises(ExperimentFileError) as caught:
        loaded.import_object(("scorers", 0, "use"), loaded.config.scorers[0].use)
    assert str(caught.value) == (
        f"{path}:6: scorers[0].use: cannot import '{module}:tonne': "
        f"module '{module}' has no attribute 'tonne' (did you mean 'tone'?)"
    )


def test_a_missing_module_names_the_folder_searched(tmp_path: Path) -> None:
    loaded = load_experiment_file(experiment(tmp_path, "nowhere_to_be_found:tone"))
    with pytest.raises(ExperimentFileError) as caught:
        loaded.import_object(("scorers", 0, "use"), "nowhere_to_be_found:tone")
    assert caught.value.line == 6
    assert caught.value.problem == (
        "cannot import 'nowhere_to_be_found:tone': module 'nowhere_to_be_found' not found "
        f"in {tmp_path} or on sys.path"
    )


def test_a_module_failing_to_import_reports_its_own_error(tmp_path: Path) -> None:
    module = f"broken_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text("import missing_dependency_xyz\n")
    with pytest.raises(ConfigError) as caught:
        import_reference(f"{module}:tone", folder=tmp_path)
    assert str(caught.value) == (
        f"importing module '{module}' failed: No module named 'missing_dependency_xyz'"
    )
    (tmp_path / f"raises_{tmp_path.name}.py").write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match="failed: RuntimeError: boom"):
        import_reference(f"raises_{tmp_path.name}:x", folder=tmp_path)


def test_a_package_module_and_a_dotted_attribute_are_followed(tmp_path: Path) -> None:
    package = tmp_path / f"pkg_{tmp_path.name}"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("class Outer:\n    class Inner:\n        value = 42\n")
    value = import_reference(f"pkg_{tmp_path.name}.mod:Outer.Inner.value", folder=tmp_path)
    assert value == 42
    with pytest.raises(ConfigError, match=r"'pkg_\w+\.mod:Outer' has no attribute 'Missing'"):
        import_reference(f"pkg_{tmp_path.name}.mod:Outer.Missing", folder=tmp_path)


@pytest.mark.parametrize("reference", ["no_colon", ":attr", "module:"])
def test_a_malformed_reference_is_a_config_error(reference: str) -> None:
    with pytest.raises(ConfigError, match="expected 'module:attribute'"):
        import_reference(reference)


def test_the_folder_is_on_sys_path_only_while_importing(tmp_path: Path) -> None:
    module = f"neighbours_{tmp_path.name}"
    (tmp_path / f"helper_{tmp_path.name}.py").write_text("value = 7\n")
    (tmp_path / f"{module}.py").write_text(
        f"import sys\nimport helper_{tmp_path.name} as helper\n"
        "seen = sys.path[0]\nx = helper.value\n"
    )
    before = list(sys.path)
    assert import_reference(f"{module}:x", folder=tmp_path) == 7  # top-level imports work
    assert import_reference(f"{module}:seen", folder=tmp_path) == str(tmp_path)
    assert sys.path == before
    assert import_reference(f"{module}:x", folder=tmp_path) == 7  # reused from sys.modules
    assert sys.path == before


def test_a_folder_already_on_sys_path_stays(tmp_path: Path) -> None:
    (tmp_path / f"kept_{tmp_path.name}.py").write_text("x = 1\n")
    sys.path.append(str(tmp_path))
    import_reference(f"kept_{tmp_path.name}:x", folder=tmp_path)
    assert sys.path.count(str(tmp_path)) == 1
    assert sys.path[-1] == str(tmp_path)


def test_a_failed_import_takes_the_folder_off_too(tmp_path: Path) -> None:
    (tmp_path / f"fails_{tmp_path.name}.py").write_text("raise ValueError('no')\n")
    before = list(sys.path)
    with pytest.raises(ConfigError):
        import_reference(f"fails_{tmp_path.name}:x", folder=tmp_path)
    assert sys.path == before


def test_a_file_named_like_a_library_does_not_shadow_later_lazy_imports(
    tmp_path: Path,
) -> None:
    # colorsys stands for any library the scorer imports lazily (regex, tokenize, ...).
    original = sys.modules.pop("colorsys", None)
    try:
        (tmp_path / "colorsys.py").write_text("SHADOW = True\n")
        module = f"lazy_{tmp_path.name}"
        (tmp_path / f"{module}.py").write_text(
            "def later():\n    import colorsys\n    return colorsys\n"
        )
        later = import_reference(f"{module}:later", folder=tmp_path)
        assert callable(later)
        library = later()
        assert not hasattr(library, "SHADOW")
        assert hasattr(library, "rgb_to_hsv")
    finally:
        sys.modules.pop("colorsys", None)
        if original is not None:
            sys.modules["colorsys"] = original

from __future__ import annotations

import evalkit


def test_all_is_sorted_and_unique() -> None:
    assert evalkit.__all__ == sorted(set(evalkit.__all__))


def test_every_exported_name_exists_and_is_documented() -> None:
    for name in evalkit.__all__:
        obj = getattr(evalkit, name)
        assert obj.__doc__, f"evalkit.{name} has no docstring"


def test_public_classes_and_functions_are_all_exported() -> None:
    public = {
        name
        for name, obj in vars(evalkit).items()
        if not name.startswith("_")
        and getattr(obj, "__module__", "").startswith("evalkit")
        and callable(obj)
    }
    assert public == set(evalkit.__all__)


def test_every_error_is_an_evalkit_error() -> None:
    for name in evalkit.__all__:
        obj = getattr(evalkit, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, evalkit.EvalkitError)

"""The prebuilt scorer registry: snake_case names → factories and their metadata.

Every prebuilt scorer is an ordinary [`Scorer`][evalkit.Scorer] built with
[`create_scorer`][evalkit.create_scorer]. A family module defines a *build* function that receives a
fresh, empty base scorer (name, description, id, direction, metadata and judge already set) and
adds the steps; `prebuilt` registers it and returns the public factory, which validates
the parameters, makes the base scorer and calls the build function. Code scorers and LLM-judged
scorers plug in the same way; an LLM scorer's build function gets the judge on its base scorer.

Parameters are read from the build function's keyword-only arguments (their annotations are
the validation types, their defaults the defaults) and described by its docstring's ``Args:``
section, so the docstring users read is also the metadata ``evalkit scorers`` prints
(docs/pages/design/prebuilt-scorers-are-ordinary.md).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from evalkit._json import to_jsonable
from evalkit.errors import ConfigError
from evalkit.scorer import Scorer, create_scorer
from evalkit.scorers._docstrings import doc_args, type_text
from evalkit.scorers._families import FAMILY_OF

ScorerKind = Literal["code", "llm"]
"""A prebuilt scorer's kind: ``"code"`` (computed) or ``"llm"`` (asks a judge)."""

#: The run fields a scorer can read, in the order they are listed.
INPUT_FIELDS = ("input", "output", "ground_truth", "request_context")

_RESERVED = ("id", "judge")


class _LazyAdapter:
    """Strict pydantic validation of one parameter, set up on first use.

    Strict mode keeps TOML and Python values honest: ``1`` is not a bool, ``"0.5"`` is not a
    float (an int is a float), a string is not a list of strings. Building the adapters (and
    importing pydantic) only when a parameter is first passed keeps ``import evalkit`` quick.
    """

    __slots__ = ("_adapter", "_hint")

    def __init__(self, hint: Any) -> None:
        self._hint = hint
        self._adapter: Any = None

    def validate(self, value: Any) -> tuple[Any, str | None]:
        """The validated value and None, or the value unchanged and pydantic's first message."""
        from pydantic import ConfigDict, TypeAdapter, ValidationError

        if self._adapter is None:
            config = ConfigDict(strict=True, arbitrary_types_allowed=True)
            self._adapter = TypeAdapter(self._hint, config=config)
        try:
            return self._adapter.validate_python(value), None
        except ValidationError as exc:
            return value, str(exc.errors()[0]["msg"])


@dataclass(frozen=True, slots=True)
class ScorerParam:
    """One parameter of a prebuilt scorer.

    Attributes:
        name: The keyword argument (and the key under ``params`` in an experiment file).
        type: The accepted type, as text (``"bool"``, ``"list[str] | None"``, ``"'all' | 'any'"``).
        default: The value used when the parameter is not given.
        description: What the parameter does.
    """

    name: str
    type: str
    default: Any
    description: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the parameter."""
        return {
            "name": self.name,
            "type": self.type,
            "default": to_jsonable(self.default),
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class ScorerInfo:
    """What the registry knows about one prebuilt scorer.

    Attributes:
        name: The registry name, snake_case (``"exact_match"``); ``use = "exact_match"``. It
            is also the id the scorer records unless it is given another.
        title: The display name given to the scorer (``"Exact Match"``).
        description: One line saying what it measures.
        kind: ``"code"`` (deterministic, no network) or ``"llm"`` (asks a judge model).
        range: The lowest and highest score it can give with default parameters (an LLM-judged
            scorer's ``scale`` parameter multiplies it).
        higher_is_better: Which direction is good; False for scorers such as toxicity.
        inputs: The run fields it needs with its default parameters, among ``input``,
            ``output``, ``ground_truth`` and ``request_context``.
        inputs_note: How parameters change what it needs, when they do.
        params: Its parameters, in signature order.
        version: The definition version, bumped whenever the logic or a prompt changes; it is
            recorded in every scorer's ``metadata`` and so stored with its scores.
        extra: The optional dependency group it needs, if any
            (``pip install 'evalkit-runner[nlp]'``).
        modules: The importable modules that group must provide.
    """

    name: str
    title: str
    description: str
    kind: ScorerKind
    range: tuple[float, float]
    higher_is_better: bool
    inputs: tuple[str, ...]
    inputs_note: str | None
    params: tuple[ScorerParam, ...]
    version: int
    extra: str | None = None
    modules: tuple[str, ...] = field(default=(), repr=False)

    @property
    def available(self) -> bool:
        """Whether the optional dependencies it needs are installed."""
        return all(importlib.util.find_spec(module) is not None for module in self.modules)

    def param(self, name: str) -> ScorerParam:
        """The parameter called ``name``; [`ConfigError`][evalkit.errors.ConfigError] when there is
        none."""
        for param in self.params:
            if param.name == name:
                return param
        raise _unknown_param(self, name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the metadata (for ``evalkit scorers --json``)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "kind": self.kind,
            "range": list(self.range),
            "higher_is_better": self.higher_is_better,
            "inputs": list(self.inputs),
            "inputs_note": self.inputs_note,
            "params": [param.to_dict() for param in self.params],
            "version": self.version,
            "extra": self.extra,
        }


class ScorerFactory(Protocol):
    """A prebuilt scorer's public factory: keyword parameters in, a new [`Scorer`][evalkit.Scorer]
    out."""

    __name__: str

    def __call__(self, **params: Any) -> Scorer: ...


@dataclass(frozen=True, slots=True)
class Entry:
    info: ScorerInfo
    factory: ScorerFactory


REGISTRY: dict[str, Entry] = {}


def prebuilt(
    name: str,
    *,
    title: str,
    inputs: tuple[str, ...],
    version: int,
    kind: ScorerKind = "code",
    range: tuple[float, float] = (0.0, 1.0),
    higher_is_better: bool = True,
    inputs_note: str | None = None,
    extra: str | None = None,
    modules: tuple[str, ...] = (),
) -> Callable[[Callable[..., Scorer]], ScorerFactory]:
    """Register a build function as the prebuilt scorer ``name`` and return its factory.

    The build function takes the base scorer as its only positional argument and its
    parameters keyword-only; its docstring's first line is the scorer's description and its
    ``Args:`` section describes every parameter. ``extra``/``modules`` name the optional
    dependency group it imports, so a missing install fails early with the ``pip`` command.
    """
    unknown = set(inputs) - set(INPUT_FIELDS)
    if unknown or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ConfigError(f"prebuilt scorer {name!r}: bad name or inputs {sorted(unknown)}")

    def register(build: Callable[..., Scorer]) -> ScorerFactory:
        module = FAMILY_OF.get(name, build.__module__)
        if name in REGISTRY or module != build.__module__:
            raise ConfigError(f"prebuilt scorer {name!r} is registered twice (by {module})")
        params, adapters, signature = _read_params(name, kind, build)
        description = inspect.getdoc(build) or ""
        info = ScorerInfo(
            name=name,
            title=title,
            description=description.splitlines()[0] if description else "",
            kind=kind,
            range=(float(range[0]), float(range[1])),
            higher_is_better=higher_is_better,
            inputs=inputs,
            inputs_note=inputs_note,
            params=params,
            version=version,
            extra=extra,
            modules=modules,
        )

        @functools.wraps(build)
        def factory(*, id: str | None = None, judge: Any = None, **values: Any) -> Scorer:
            if judge is not None and kind == "code":
                raise ConfigError(f"scorer {name!r} is code-based and takes no judge")
            if id is not None and (not isinstance(id, str) or not id.strip()):
                raise ConfigError(f"scorer {name!r}: id must be a non-empty string, got {id!r}")
            checked = _check_values(info, adapters, values)
            _require_modules(info)
            base = create_scorer(
                title,
                info.description,
                # The id is the registry name, as in an experiment file's `use`
                # (docs/pages/design/one-scorer-id-rule.md).
                id=id or name,
                judge=judge,
                higher_is_better=higher_is_better,
                metadata={
                    "prebuilt": name,
                    "version": version,
                    "params": {key: to_jsonable(value) for key, value in checked.items()},
                },
            )
            # Shipped to worker processes as name and parameters, built again there
            # (docs/pages/design/scorers-ship-as-recipes.md).
            return build(base, **checked).shipped_as(
                functools.partial(factory, id=id, judge=judge, **checked)
            )

        # Shown by help() and inspect: the build parameters plus id (and judge for LLM scorers).
        factory.__signature__ = signature  # type: ignore[attr-defined]
        REGISTRY[name] = Entry(info, factory)
        return factory

    return register


def _read_params(
    name: str, kind: ScorerKind, build: Callable[..., Scorer]
) -> tuple[tuple[ScorerParam, ...], dict[str, _LazyAdapter], inspect.Signature]:
    signature = inspect.signature(build)
    hints = typing.get_type_hints(build)
    docs = doc_args(inspect.getdoc(build) or "")
    base_param, *rest = signature.parameters.values()
    params: list[ScorerParam] = []
    adapters: dict[str, _LazyAdapter] = {}
    for param in rest:
        where = f"prebuilt scorer {name!r}, parameter {param.name!r}"
        if param.kind is not param.KEYWORD_ONLY or param.default is param.empty:
            raise ConfigError(f"{where}: must be keyword-only with a default")
        if param.name in _RESERVED:
            raise ConfigError(f"{where}: the name is reserved")
        if param.name not in docs:
            raise ConfigError(f"{where}: not described in the docstring's Args section")
        adapters[param.name] = _LazyAdapter(hints[param.name])
        params.append(
            ScorerParam(param.name, type_text(hints[param.name]), param.default, docs[param.name])
        )
    keyword = inspect.Parameter.KEYWORD_ONLY
    public = [
        *(p.replace(annotation=hints[p.name]) for p in rest),
        inspect.Parameter("id", keyword, default=None, annotation="str | None"),
    ]
    if kind == "llm":
        public.append(inspect.Parameter("judge", keyword, default=None, annotation="Judge | None"))
    del base_param
    return tuple(params), adapters, signature.replace(parameters=public, return_annotation=Scorer)


def _check_values(
    info: ScorerInfo, adapters: Mapping[str, _LazyAdapter], values: Mapping[str, Any]
) -> dict[str, Any]:
    checked = {param.name: param.default for param in info.params}
    for key, value in values.items():
        adapter = adapters.get(key)
        if adapter is None:
            raise _unknown_param(info, key)
        checked[key], problem = adapter.validate(value)
        if problem is not None:
            raise ConfigError(
                f"scorer {info.name!r}, parameter {key!r}: {problem} "
                f"(expected {info.param(key).type}, got {value!r})"
            )
    return checked


def _unknown_param(info: ScorerInfo, key: str) -> ConfigError:
    names = [param.name for param in info.params]
    hint = did_you_mean(key, names)
    accepted = ", ".join(names) if names else "none"
    return ConfigError(
        f"scorer {info.name!r} has no parameter {key!r}{hint}; its parameters are: {accepted}"
    )


def did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def _require_modules(info: ScorerInfo) -> None:
    # Optional libraries are imported when a scorer is built, not with evalkit
    # (docs/pages/design/optional-heavy-libraries.md).
    missing = [module for module in info.modules if importlib.util.find_spec(module) is None]
    if missing:
        raise ConfigError(
            f"scorer {info.name!r} needs the optional {info.extra!r} dependencies "
            f"(missing module {', '.join(missing)}): pip install 'evalkit-runner[{info.extra}]'"
        )

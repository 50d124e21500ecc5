"""The CLI's standard streams: no raw control character on a terminal, no traceback at ``| head``.

While a command runs, `guarded_streams` puts a guard on ``sys.stdout`` and
``sys.stderr``, whatever writes to them (``print``, argparse, the progress bar, a warning):

- stderr shows control and bidi characters as escapes (`evalkit.report.visible`), but
  for the carriage return the progress bar redraws with; stdout does the same on a terminal.
  Tables and messages escape such characters wherever they go and JSON writes them as its
  own ``\\u`` escapes; only CSV into a file or a pipe keeps the exact text.
- A reader that goes away (``evalkit sql ... | head``) ends the output, not the command: the
  rest of what it prints is dropped, the exit code stays what the command found, and no
  ``BrokenPipeError`` is printed, now or when the interpreter flushes at exit.
- A character the stream's encoding cannot hold is written as a backslash escape.
- evalkit's own notes, the ``RuntimeWarning``s whose text starts with ``evalkit:`` (a store
  locked by another process, a judge that moved since the run being resumed), are one line
  of their own on stderr, without the file and line Python's warnings are shown with.

See docs/pages/design/cli-output-streams.md.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO, cast

from evalkit._visible import visible


def _keep_returns(text: str) -> str:
    return "\r".join(visible(part) for part in text.split("\r"))


class _Guard:
    """A text stream in front of another: escapes what it writes and survives a closed pipe."""

    def __init__(self, stream: TextIO, *, escape: bool, keep_returns: bool = False) -> None:
        self._stream = stream
        self._escape = escape
        self._keep_returns = keep_returns
        self.broken = False

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        shown = text
        if self._escape:
            shown = _keep_returns(text) if self._keep_returns else visible(text)
        try:
            try:
                self._stream.write(shown)
            except UnicodeEncodeError:
                encoding = getattr(self._stream, "encoding", None) or "utf-8"
                self._stream.write(shown.encode(encoding, "backslashreplace").decode(encoding))
        except BrokenPipeError:
            self._drop()
        return len(text)

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self) -> None:
        """Drop all further output, and let the interpreter's flush at exit succeed."""
        self.broken = True
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            return
        # What is still buffered goes to /dev/null instead of failing again at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        # isatty, fileno, encoding, ...: what the stream itself says.
        return getattr(self._stream, name)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


@contextmanager
def guarded_streams() -> Iterator[None]:
    """Guard ``sys.stdout`` and ``sys.stderr`` for the duration of a command (see above)."""
    stdout, stderr = sys.stdout, sys.stderr
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, RuntimeWarning) and str(message).startswith("evalkit: "):
            print(message, file=sys.stderr)
        else:
            shown(message, category, *args, **kwargs)

    warnings.showwarning = show
    guards = []
    if stdout is not None:
        guards.append(_Guard(stdout, escape=_is_terminal(stdout)))
        sys.stdout = cast(TextIO, guards[-1])
    if stderr is not None:
        guards.append(_Guard(stderr, escape=True, keep_returns=True))
        sys.stderr = cast(TextIO, guards[-1])
    try:
        yield
    finally:
        for guard in guards:
            guard.flush()
        sys.stdout, sys.stderr = stdout, stderr
        warnings.showwarning = shown

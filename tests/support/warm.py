"""Child processes that start warm, for the tests about another process (a lock two processes
share, a cache a new process reads): each is forked from multiprocessing's forkserver, which
imported torch, transformers and the lab's modules once for the session (on the quiet 2-core
machine, importing the demo builder and the loaders took a fresh interpreter 5.4-6.3 s, a warm
child 0.04 s). A test about a fresh interpreter itself (peak memory, the CLI, what an
import pulls in) starts one with ``subprocess`` instead.

A child runs ``code`` as ``python -c code *argv`` would, in the caller's environment and working
folder of the moment; what it prints, stdout and stderr alike, arrives line by line in
``Child.lines``.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import sys
import threading
import types

PRELOAD = ["torch", "transformers", "pandas", "core.readers.data", "core.demo.scenario", "core.models",
           "core.scoring"]


@functools.cache
def _context():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


class _Lines:
    """A text stream that sends each finished line through a pipe."""

    def __init__(self, connection):
        self.connection, self.pending = connection, ""

    def write(self, text: str) -> int:
        *done, self.pending = (self.pending + text).split("\n")
        for line in done:
            self.connection.send(line + "\n")
        return len(text)

    def flush(self) -> None:
        pass


def _run(code: str, argv: list[str], environment: dict, folder: str, connection) -> None:
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(folder)
    sys.path.insert(0, folder)
    sys.argv = ["-c", *argv]
    sys.stdout = sys.stderr = _Lines(connection)
    exec(compile(code, "<warm child>", "exec"), {"__name__": "__main__"})


class Child:
    """``code`` run in a warm child process (see the module doc)."""

    def __init__(self, code: str, *argv: str, folder: str | os.PathLike = "."):
        context = _context()
        reader, writer = context.Pipe(duplex=False)
        self.lines: list[str] = []
        self.process = context.Process(target=_run, daemon=True, args=(
            code, list(map(str, argv)), dict(os.environ), os.path.abspath(folder), writer))
        main, sys.modules["__main__"] = sys.modules["__main__"], types.ModuleType("__main__")
        try:   # else the child reruns the page script Streamlit's AppTest left as __main__
            self.process.start()
        finally:
            sys.modules["__main__"] = main
        writer.close()
        self.reader = threading.Thread(target=self._read, args=(reader,), daemon=True)
        self.reader.start()

    def _read(self, reader) -> None:
        try:
            while True:
                self.lines.append(reader.recv())
        except EOFError:
            pass

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, None while it still runs after ``timeout`` seconds; once it has
        ended, its output is read whole (the reader thread can lag behind the exit)."""
        self.process.join(timeout)
        if self.process.exitcode is not None:
            self.reader.join(timeout=30)
        return self.process.exitcode

    def kill(self) -> None:
        self.process.kill()
        self.process.join()

    @property
    def output(self) -> str:
        return "".join(self.lines)

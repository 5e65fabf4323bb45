"""The node's spawner: one small process, forked at the start of ``serve`` once the node's modules
are imported and before any thread or event loop runs, that forks each of the node's child
processes on request (the writer, the delivery process, the workers), so that none starts a new
interpreter and imports SQLAlchemy and alarmhub again (a pre-fork, as PostgreSQL's postmaster's).

The node asks over a socket pair: the module to run, its arguments and environment, and the file
descriptors it hands the child (sent over the pair and placed in the child at the numbers the node
has them at, as ``subprocess``'s ``pass_fds`` would). The spawner forks a go-between that forks
the child and exits at once: the node, a child subreaper (``PR_SET_CHILD_SUBREAPER``), becomes
the child's parent, and waits for it, sees its exit code and signals it as any child of its own
(:class:`Child`, watched as a ``subprocess.Popen``). The child waits until it is the node's,
takes a new interpreter's signal dispositions, runs the module's ``main()`` with ``sys.argv`` as
``python -m module ARGS`` would set it, and ends with ``os._exit``.

At its start the spawner replaces every descriptor it inherited but the standard streams (the
node lock among them) with /dev/null, so that neither it nor a child holds what is the node's; it
ignores SIGINT and SIGTERM (the node handles them) and exits when the node's end of the pair
closes, however the node ended. The spawner and each child name themselves (``/proc/PID/comm``,
what ``ps`` and ``top`` show): ``ah-spawner``, and ``ah-`` and the module's last name
without ``_process`` (``ah-writer``, ``ah-delivery``, ``ah-worker``). Where there is no spawner
(threads or an event loop ran already, not Linux, or it died), :func:`popen` starts the child
with ``subprocess`` as before (said once in the log); so does a node embedded in another
program, which never starts one.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import importlib
import json
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn

from alarmhub import metrics
from alarmhub.node import lifeline

log = logging.getLogger("alarmhub.node.spawner")
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NAME = 15
MAX_REQUEST_BYTES = 1 << 20
MAX_FDS = 64
REPLY_SECONDS = 30.0
"""How long the node waits for a child's pid before it takes the spawner for broken."""
ADOPTION_SECONDS = 10.0
"""How long a child waits to become the node's (its go-between exits at once)."""


class SpawnerGone(OSError):
    """The spawner does not answer (it ended, or its channel broke)."""


class Child:
    """A child process the spawner forked and the node is the parent of, watched as a
    ``subprocess.Popen`` is: ``pid``, ``returncode`` (minus the signal that ended it), ``poll``,
    ``wait``, ``send_signal``, ``terminate``, ``kill``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._waitpid_lock = threading.Lock()

    def poll(self) -> int | None:
        """The exit code once the child has ended, else None (also while another thread waits)."""
        if self.returncode is None and self._waitpid_lock.acquire(blocking=False):
            try:
                self._reap(os.WNOHANG)
            finally:
                self._waitpid_lock.release()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to end (``subprocess.TimeoutExpired`` after ``timeout``)."""
        if timeout is None:
            with self._waitpid_lock:
                while self.returncode is None:
                    self._reap(0)
            return self.returncode
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while (code := self.poll()) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return code

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:  # reaped elsewhere: its code is lost (as subprocess says 0)
            self.returncode = 0
            return
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)

    def send_signal(self, sig: int) -> None:
        """Signal the child unless it has ended (its pid may be another process's by then)."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


ChildProcess = Child | subprocess.Popen[bytes]
"""A child process of the node, forked by the spawner or started by ``subprocess``."""


class Spawner:
    """The node's end of the spawner: asks it for a child, one request at a time."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.pid = pid
        self._sock = sock
        self._lock = threading.Lock()

    def spawn(
        self, module: str, args: Sequence[str], pass_fds: Sequence[int], env: Mapping[str, str]
    ) -> Child:
        """Fork ``python -m module ARGS`` with ``pass_fds`` and ``env``; OSError when the spawner
        could not fork it, SpawnerGone when the spawner does not answer."""
        request = {"module": module, "args": list(args), "fds": list(pass_fds), "env": dict(env)}
        data = json.dumps(request).encode()
        with self._lock:
            try:
                socket.send_fds(self._sock, [data], list(pass_fds))
                reply = self._sock.recv(4096)
            except OSError as exc:  # a timeout included
                raise SpawnerGone(f"the spawner did not answer: {exc!r}") from None
        if not reply:
            raise SpawnerGone("the spawner ended")
        try:
            answer: dict[str, Any] = json.loads(reply)
        except ValueError:
            raise SpawnerGone(f"the spawner answered {reply!r}") from None
        if "error" in answer:
            raise OSError(f"the spawner could not start {module}: {answer['error']}")
        return Child(int(answer["pid"]))

    def close(self, kill: bool = False) -> None:
        """Close its channel (it exits) and wait for it; ``kill``: it does not answer."""
        self._sock.close()
        with contextlib.suppress(ProcessLookupError):
            if kill:
                os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


_spawner: Spawner | None = None
_fallback_said = False


def popen(
    module: str,
    args: Sequence[str],
    pass_fds: Sequence[int] = (),
    env: Mapping[str, str] | None = None,
) -> ChildProcess:
    """Start ``python -m module ARGS`` as a child of this process, handed ``pass_fds`` (at the
    same numbers), stdin on /dev/null, with ``env`` (this process's environment when None):
    forked by the spawner when there is one, else by ``subprocess``."""
    spawner = _spawner
    if spawner is not None:
        try:
            return spawner.spawn(module, args, pass_fds, os.environ if env is None else env)
        except SpawnerGone as exc:
            _gone(spawner, exc)
    return _subprocess(module, args, pass_fds, env)


async def start_child(
    module: str,
    args: Sequence[str],
    pass_fds: Sequence[int] = (),
    env: Mapping[str, str] | None = None,
) -> ChildProcess:
    """:func:`popen` from an event loop: the spawner is asked from a thread (its two forks of a
    process the node's size take milliseconds), ``subprocess`` runs in the loop's own thread
    (the kernel kills a child that asked for PR_SET_PDEATHSIG when its parent *thread* ends)."""
    spawner = _spawner
    if spawner is not None:
        try:
            environment = os.environ if env is None else env
            return await asyncio.to_thread(spawner.spawn, module, args, pass_fds, environment)
        except SpawnerGone as exc:
            _gone(spawner, exc)
    return _subprocess(module, args, pass_fds, env)


def _subprocess(
    module: str, args: Sequence[str], pass_fds: Sequence[int], env: Mapping[str, str] | None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        pass_fds=list(pass_fds),
        stdin=subprocess.DEVNULL,
        env=env,
    )


def _gone(spawner: Spawner, exc: SpawnerGone) -> None:
    """``spawner`` broke: ended, and children started by ``subprocess`` from now on."""
    global _spawner
    if _spawner is spawner:
        _spawner = None
    spawner.close(kill=True)
    _say_fallback(str(exc))


def _say_fallback(reason: str) -> None:
    global _fallback_said
    if not _fallback_said:
        _fallback_said = True
        log.warning("child processes started by subprocess", extra={"reason": reason})


def _unusable() -> str | None:
    """Why no spawner can be forked now; None when it can."""
    if not sys.platform.startswith("linux"):
        return "no child subreaper on this system"
    if threading.active_count() != 1:
        return "threads run already"
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        return "an event loop runs already"
    return None


def _subreaper(on: bool) -> None:
    """Make this process the parent of its orphaned descendants (or no longer)."""
    lifeline.prctl(PR_SET_CHILD_SUBREAPER, int(on), "PR_SET_CHILD_SUBREAPER")


def process_name(module: str) -> str:
    """The name a child running ``module`` gives itself (``ps``, ``top``): at most 15 bytes."""
    return ("ah-" + module.rsplit(".", 1)[-1].removesuffix("_process"))[:15]


def _name_self(name: str) -> None:
    """Name this process (``/proc/self/comm``); a system that cannot is left as it is."""
    with contextlib.suppress(OSError, AttributeError):
        lifeline.prctl(PR_SET_NAME, name.encode()[:15], "PR_SET_NAME")


def start(preload: Sequence[str] = ()) -> bool:
    """Fork the spawner, ``preload`` (the children's modules) imported first; whether it runs
    (not when threads or an event loop run already, or not on Linux: said in the log)."""
    global _spawner
    if _spawner is not None:
        return True
    reason = _unusable()
    if reason is None:
        try:
            for name in preload:
                importlib.import_module(name)
            _subreaper(True)
            _spawner = _fork_spawner()
        except OSError as exc:
            reason = repr(exc)
    if reason is not None:
        _say_fallback(reason)
        return False
    assert _spawner is not None
    log.info("spawner started", extra={"pid": _spawner.pid})
    return True


def stop() -> None:
    """End the spawner (the children it forked go on: they are this process's)."""
    global _spawner
    spawner, _spawner = _spawner, None
    if spawner is not None:
        spawner.close()


@contextlib.contextmanager
def running(preload: Sequence[str] = ()) -> Iterator[None]:
    """The spawner runs while the block does (:func:`start`, :func:`stop`)."""
    start(preload)
    try:
        yield
    finally:
        stop()


def _fork_spawner() -> Spawner:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
        with contextlib.suppress(Exception):
            stream.flush()
    gc.collect()  # no garbage of the node's left for the children to collect (and close)
    node = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            ours.close()
            _serve(theirs, node)
            code = 0
        except BaseException:
            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            os._exit(code)
    theirs.close()
    ours.settimeout(REPLY_SECONDS)
    return Spawner(ours, pid)


def _serve(sock: socket.socket, node: int) -> None:
    """The spawner's loop: a child forked for each request, until the node's end closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _name_self("ah-spawner")
    _release_inherited(keep={0, 1, 2, sock.fileno()})
    gc.freeze()  # the node's objects, never collected here: their pages stay shared
    while True:
        try:
            data, fds, flags, _ = socket.recv_fds(sock, MAX_REQUEST_BYTES, MAX_FDS)
        except OSError:
            return
        if not data and not fds:
            return  # the node's end closed
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise ValueError("request too large")
            reply: dict[str, Any] = {"pid": _fork_child(sock, json.loads(data), fds, node)}
        except Exception as exc:
            reply = {"error": repr(exc)}
        finally:
            for fd in fds:
                os.close(fd)
        try:
            sock.sendall(json.dumps(reply).encode())
        except OSError:
            return


def _release_inherited(keep: set[int]) -> None:
    """Every inherited descriptor but ``keep`` on /dev/null: the number stays taken (an object of
    the node's that owns it never closes another file by it), the file is no longer held."""
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
        if fd in keep or fd == null:
            continue
        with contextlib.suppress(OSError):  # the directory's own, closed by now
            os.fstat(fd)
            os.dup2(null, fd, inheritable=False)
    os.close(null)


def _fork_child(sock: socket.socket, request: dict[str, Any], fds: list[int], node: int) -> int:
    """Fork a go-between that forks the child and exits; the child's pid. Once the go-between is
    reaped here, the child is the node's (re-parented to the subreaper)."""
    read_end, write_end = os.pipe()
    between = os.fork()
    if between == 0:
        code = 1
        try:
            os.close(read_end)
            between = os.getpid()
            child = os.fork()
            if child == 0:
                os.close(write_end)
                _child(sock, request, fds, node, between)
            os.write(write_end, str(child).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    answer = b""
    try:
        while chunk := os.read(read_end, 64):
            answer += chunk
    finally:
        os.close(read_end)
        os.waitpid(between, 0)
    if not answer:
        raise OSError("the child was not forked")
    return int(answer)


def _child(
    sock: socket.socket, request: dict[str, Any], fds: list[int], node: int, between: int
) -> NoReturn:
    """The child of go-between ``between``: once the node's, run the module's ``main()``; never
    returns."""
    code = 1
    try:
        sock.close()
        _name_self(process_name(request["module"]))
        _await_adoption(node, between)
        _place(fds, request["fds"])
        _reset_signals()
        env = request["env"]
        if env != dict(os.environ):
            os.environ.clear()
            os.environ.update(env)
        metrics.follow_environment()
        random.seed()
        code = _run_main(request["module"], request["args"])
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _await_adoption(node: int, between: int) -> None:
    """Wait until the go-between has exited and the node is this process's parent; exit when
    another process is (the node ended meanwhile)."""
    deadline = time.monotonic() + ADOPTION_SECONDS
    while (parent := os.getppid()) != node:
        if parent != between or time.monotonic() > deadline:
            os._exit(1)
        time.sleep(0.0002)


def _place(fds: list[int], numbers: list[int]) -> None:
    """Put each received descriptor at the number the node has it at, stdin on /dev/null."""
    if len(fds) != len(numbers) or any(number < 3 for number in numbers):
        raise ValueError("descriptors do not match their numbers")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    above = max(numbers, default=2) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, above) for fd in fds]
    for fd in fds:
        os.close(fd)
    for fd, number in zip(moved, numbers, strict=True):
        os.dup2(fd, number)
        os.close(fd)


def _reset_signals() -> None:
    """The signal dispositions and mask of a new interpreter: defaults, SIGINT raising
    KeyboardInterrupt, SIGPIPE and SIGXFSZ ignored."""
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _run_main(name: str, args: list[str]) -> int:
    """``main()`` of module ``name`` as ``python -m`` runs it; its exit code."""
    module = importlib.import_module(name)
    sys.argv = [module.__file__ or name, *args]
    try:
        module.main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    return 0


__all__ = [
    "Child",
    "ChildProcess",
    "Spawner",
    "SpawnerGone",
    "popen",
    "process_name",
    "running",
    "start",
    "start_child",
    "stop",
]

"""The processes `make test-dify` starts: PostgreSQL, Redis, Dify's api (gunicorn) and its Celery worker.

Every process listens on 127.0.0.1 on a free port and keeps its files under one work folder. Each is started in a
session of its own, its pid written to `<work>/pids` as soon as it exists (so `scripts/test_dify.sh` can stop
it even when this Python process is killed), and `Stack.close()` stops them all by pid, newest first: SIGTERM,
then SIGKILL after a grace period. `Phases` times each step and prints it as it ends.
"""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BOOT = HERE / "dify_boot.py"  # runs one of Dify's programs under its venv (see there)
LOCALHOST = "127.0.0.1"


class StackError(RuntimeError):
    """A component did not start; the message names it and ends with the last lines of its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOCALHOST, 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Phases:
    """Wall-clock time of each phase, printed when it ends and kept for the summary."""

    def __init__(self, out: Callable[[str], None] | None = None) -> None:
        self.times: list[tuple[str, float]] = []
        self._out = out or (lambda line: print(line, file=sys.stderr, flush=True))

    @contextmanager
    def phase(self, name: str):
        started = time.perf_counter()
        self._out(f"==> test-dify: {name} ...")
        try:
            yield
        finally:
            took = time.perf_counter() - started
            self.times.append((name, took))
            self._out(f"==> test-dify: {name}: {took:.1f} s")

    def summary(self) -> str:
        width = max((len(name) for name, _ in self.times), default=0)
        rows = [f"  {name:<{width}}  {took:6.1f} s" for name, took in self.times]
        rows.append(f"  {'total':<{width}}  {sum(t for _, t in self.times):6.1f} s")
        return "test-dify phases:\n" + "\n".join(rows)


class Stack:
    """Processes started for one test run, stopped by pid whatever happens (see the module docstring)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self._pid_file = work / "pids"
        self._procs: list[tuple[str, subprocess.Popen]] = []

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        user: str | None = None,
    ) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("ab")
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                user=user,
            )
        finally:
            log.close()
        self._procs.append((name, proc))
        with self._pid_file.open("a") as f:
            f.write(f"{proc.pid} {name}\n")
        return proc

    def adopt(self, name: str, pid: int) -> None:
        """A process another object starts and stops (OUR plugin process): only recorded in the pid file, so the
        script stops it too if this Python process dies before it could."""
        with self._pid_file.open("a") as f:
            f.write(f"{pid} {name}\n")

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def check_alive(self, name: str, proc: subprocess.Popen) -> None:
        if proc.poll() is not None:
            raise StackError(
                f"{name} exited with {proc.returncode}; its log ({self.log(name)}):\n{tail(self.log(name))}"
            )

    def wait_until(self, name: str, proc: subprocess.Popen, ready: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive(name, proc)
            try:
                if ready():
                    return
            except Exception:  # noqa: BLE001 - not ready yet
                pass
            time.sleep(0.2)
        raise StackError(
            f"{name} was not ready in {timeout:.0f} s; its log ({self.log(name)}):\n{tail(self.log(name))}"
        )

    def close(self) -> None:
        """SIGTERM every process group, newest first; SIGKILL what is left after 15 s."""
        for _name, proc in reversed(self._procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 15
        for _name, proc in reversed(self._procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        self._procs.clear()
        self._pid_file.unlink(missing_ok=True)


# --- PostgreSQL and Redis from Debian's packages ---------------------------------------------------------------


def postgres_bindir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise StackError(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres); "
            "scripts/test_dify.sh installs Debian's postgresql package"
        )
    return found[-1].parent


def _run(argv: Sequence[str], what: str, **kwargs: Any) -> None:
    done = subprocess.run(list(argv), capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise StackError(f"{what} failed ({done.returncode}): {(done.stderr or done.stdout)[-2000:]}")


def start_postgres(stack: Stack, database: str) -> int:
    """A fresh cluster under <work>/postgres owned by an unprivileged user (PostgreSQL refuses to run as root)."""
    bindir = postgres_bindir()
    user = None
    data = stack.work / "postgres"
    if os.geteuid() == 0:
        user = "postgres"
        try:
            owner = pwd.getpwnam(user)
        except KeyError:
            raise StackError(
                "running as root needs the 'postgres' user (Debian's postgresql package creates it)"
            ) from None
        stack.work.chmod(0o755)  # the postgres user must reach its data folder
        data.mkdir(mode=0o700)
        os.chown(data, owner.pw_uid, owner.pw_gid)
    else:
        data.mkdir(mode=0o700)
    _run(
        [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ],
        "initdb",
        user=user,
        cwd=stack.work,
    )
    port = free_port()
    proc = stack.start(
        "postgres",
        [
            str(bindir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-c",
            f"listen_addresses={LOCALHOST}",
            "-c",
            f"unix_socket_directories={data}",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=200",
        ],
        user=user,
        cwd=stack.work,
    )
    psql = shutil.which("psql") or str(bindir / "psql")

    def ready() -> bool:
        return (
            subprocess.run(
                [psql, "-h", LOCALHOST, "-p", str(port), "-U", "postgres", "-tAc", "select 1"], capture_output=True
            ).returncode
            == 0
        )

    stack.wait_until("postgres", proc, ready, 60)
    _run(
        [psql, "-h", LOCALHOST, "-p", str(port), "-U", "postgres", "-c", f"create database {database}"],
        "create database",
    )
    return port


def start_redis(stack: Stack) -> int:
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(server).exists():
        raise StackError("redis-server is not installed; scripts/test_dify.sh installs Debian's redis-server package")
    folder = stack.work / "redis"
    folder.mkdir()
    port = free_port()
    proc = stack.start(
        "redis",
        [
            server,
            "--port",
            str(port),
            "--bind",
            LOCALHOST,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
        ],
    )

    def ready() -> bool:
        with socket.create_connection((LOCALHOST, port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")

    stack.wait_until("redis", proc, ready, 30)
    return port


# --- Dify's api --------------------------------------------------------------------------------------------------


def unpack_dify(tarball: Path, work: Path) -> Path:
    """The api source from the pinned `git archive`; returns the `api/` folder."""
    target = work / "dify"
    target.mkdir()
    with tarfile.open(tarball) as archive:
        archive.extractall(target, filter="data")
    return target / "api"


CELERY_QUEUES = (
    "api_token,dataset,dataset_summary,priority_dataset,priority_pipeline,pipeline,mail,ops_trace,"
    "app_deletion,app_rbac,plugin,workflow_storage,conversation,workflow,schedule_poller,"
    "schedule_executor,triggered_workflow_dispatcher,trigger_refresh_publisher,trigger_refresh_executor,"
    "retention,workflow_based_app_execution"
)  # api/docker/entrypoint.sh's community-edition list


def dify_env(
    *,
    api_port: int,
    pg_port: int,
    redis_port: int,
    storage: Path,
    sandbox_url: str,
    daemon_url: str,
    daemon_key: str,
    inner_key: str,
    sandbox_key: str,
) -> dict[str, str]:
    """The environment that boots Dify's api (names are Dify's; ../shared/reference/dify-e2e.md)."""
    own = f"http://{LOCALHOST}:{api_port}"
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "TZ")}
    return {
        **keep,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONPATH": ".",
        "FLASK_APP": "app.py",
        "SECRET_KEY": "gcite-test-dify-secret-key-0123456789abcdef",
        "DEPLOY_ENV": "PRODUCTION",
        "LOG_LEVEL": "INFO",
        "MIGRATION_ENABLED": "false",
        "CONSOLE_API_URL": own,
        "CONSOLE_WEB_URL": own,
        "SERVICE_API_URL": own,
        "APP_WEB_URL": own,
        "FILES_URL": own,
        "INTERNAL_FILES_URL": own,
        "TRIGGER_URL": own,
        "DB_TYPE": "postgresql",
        "DB_USERNAME": "postgres",
        "DB_PASSWORD": "postgres",
        "DB_HOST": LOCALHOST,
        "DB_PORT": str(pg_port),
        "DB_DATABASE": "dify",
        "REDIS_HOST": LOCALHOST,
        "REDIS_PORT": str(redis_port),
        "REDIS_PASSWORD": "",
        "REDIS_DB": "0",
        "CELERY_BROKER_URL": f"redis://{LOCALHOST}:{redis_port}/1",
        "CELERY_BACKEND": "redis",
        "STORAGE_TYPE": "opendal",
        "OPENDAL_SCHEME": "fs",
        "OPENDAL_FS_ROOT": str(storage),
        "VECTOR_STORE": "",
        "KEYWORD_DATA_SOURCE_TYPE": "database",
        "CODE_EXECUTION_ENDPOINT": sandbox_url,
        "CODE_EXECUTION_API_KEY": sandbox_key,
        "PLUGIN_DAEMON_URL": daemon_url,
        "PLUGIN_DAEMON_KEY": daemon_key,
        "INNER_API_KEY_FOR_PLUGIN": inner_key,
        "MARKETPLACE_ENABLED": "false",
        "CHECK_UPDATE_URL": "",
        "ENABLE_CHECK_UPGRADABLE_PLUGIN_TASK": "false",
        "ENABLE_OTEL": "false",
        "SENTRY_DSN": "",
    }


def run_migrations(stack: Stack, python: Path, api: Path, env: Mapping[str, str]) -> None:
    proc = stack.start("migrations", [str(python), str(BOOT), "flask", "db", "upgrade"], env=env, cwd=api)
    try:
        code = proc.wait(timeout=600)
    except subprocess.TimeoutExpired:
        raise StackError(
            f"Dify's migrations did not finish in 600 s; log ({stack.log('migrations')}):\n"
            f"{tail(stack.log('migrations'))}"
        ) from None
    if code:
        raise StackError(
            f"Dify's migrations failed ({code}); log ({stack.log('migrations')}):\n{tail(stack.log('migrations'))}"
        )


def start_api(stack: Stack, python: Path, api: Path, env: Mapping[str, str], port: int) -> subprocess.Popen:
    """gunicorn with the gevent websocket worker, as api/docker/entrypoint.sh starts it."""
    return stack.start(
        "api",
        [
            str(python),
            str(BOOT),
            "gunicorn",
            "--no-control-socket",
            "--bind",
            f"{LOCALHOST}:{port}",
            "--workers",
            "1",
            "--worker-class",
            "geventwebsocket.gunicorn.workers.GeventWebSocketWorker",
            "--worker-connections",
            "50",
            "--timeout",
            "200",
            "app:socketio_app",
        ],
        env=env,
        cwd=api,
    )


def start_worker(stack: Stack, python: Path, api: Path, env: Mapping[str, str]) -> subprocess.Popen:
    """The Celery worker: chat runs (workflow_based_app_execution) and indexing (dataset) run there."""
    return stack.start(
        "worker",
        [
            str(python),
            str(BOOT),
            "celery",
            "-A",
            "celery_entrypoint.celery",
            "worker",
            "-P",
            "solo",
            "--loglevel",
            "INFO",
            "-Q",
            CELERY_QUEUES,
        ],
        env=env,
        cwd=api,
    )

"""`ensure_admin`: the first login is never lost, whatever folder refuses the copy, and the
address printed is the one the hub serves."""

import io
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.test import RequestFactory

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def plain(settings, monkeypatch):
    monkeypatch.delenv("HOMEHUB_ADMIN_PASSWORD", raising=False)
    settings.CSRF_TRUSTED_ORIGINS = []


@pytest.fixture
def unwritable(tmp_path) -> Path:
    """A folder no one can write into, root included: a file stands where its parent should."""
    (tmp_path / "not-a-folder").write_text("")
    return tmp_path / "not-a-folder" / "homehub"


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("ensure_admin", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def run_process(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`manage.py ensure_admin` in a process of its own, as a deployment runs it."""
    return subprocess.run(
        [sys.executable, "manage.py", "ensure_admin", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def logs_in(password: str) -> bool:
    """The account `admin` logs in with `password` (as the login form asks, with its request)."""
    return authenticate(RequestFactory().post("/login/"), username="admin", password=password) is not None


def printed_password(out: str) -> str:
    return re.search(r"with password: (\S+)", out).group(1)


def test_password_printed_and_kept_in_the_first_writable_state_folder(settings, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    settings.HOMEHUB_STATE_DIRS = [project, tmp_path]
    out, err = run()
    password = printed_password(out)
    assert logs_in(password)
    kept = project / ".homehub-admin-password"
    assert kept.read_text() == password + "\n" and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert f"kept in {kept}" in out and err == ""
    assert "Log in at http://127.0.0.1:8000/ as admin" in out
    again, _ = run()
    assert f"existing account (password in {kept})" in again
    assert get_user_model().objects.filter(is_superuser=True).count() == 1


def test_read_only_project_folder_keeps_the_copy_in_the_state_folder(settings, tmp_path, unwritable):
    state = tmp_path / "state"
    state.mkdir()
    settings.HOMEHUB_STATE_DIRS = [unwritable, state]  # the project folder first, as by default
    out, err = run()
    password = printed_password(out)
    assert (state / ".homehub-admin-password").read_text().strip() == password
    assert err == "" and logs_in(password)


def test_no_writable_folder_costs_the_copy_not_the_password(settings, unwritable):
    settings.HOMEHUB_STATE_DIRS = [unwritable]
    out, err = run()
    password = printed_password(out)
    assert logs_in(password)
    assert "No copy of the password was kept" in err and "HOMEHUB_STATE_DIR" in err
    assert str(unwritable) in err
    again, _ = run()
    assert "with your existing account." in again


def test_an_account_whose_password_could_not_be_printed_is_not_kept(settings, tmp_path):
    class ClosedTerminal(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    settings.HOMEHUB_STATE_DIRS = [tmp_path]
    with pytest.raises(BrokenPipeError):
        call_command("ensure_admin", stdout=ClosedTerminal())
    assert not get_user_model().objects.exists()
    assert not (tmp_path / ".homehub-admin-password").exists()
    assert logs_in(printed_password(run()[0]))


def test_a_chosen_password_is_not_written_anywhere(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("HOMEHUB_ADMIN_PASSWORD", "elegida-por-mi-2024")
    settings.HOMEHUB_STATE_DIRS = [tmp_path]
    out, _ = run()
    assert printed_password(out) == "elegida-por-mi-2024"
    assert not (tmp_path / ".homehub-admin-password").exists()


@pytest.mark.parametrize(
    ("args", "origins", "url"),
    [
        (["--host", "0.0.0.0", "--port", "9000"], [], "http://127.0.0.1:9000/"),
        (["--host", "192.168.1.20"], [], "http://192.168.1.20:8000/"),
        (["--host", "::1", "--port", "8100"], [], "http://[::1]:8100/"),
        ([], ["https://hub.example.org"], "https://hub.example.org/"),
        (["--port", "8001"], ["https://hub.example.org"], "http://127.0.0.1:8001/"),
        (["--url", "https://casa.example.org/"], ["https://hub.example.org"], "https://casa.example.org/"),
    ],
)
def test_the_url_printed_is_where_the_hub_serves(settings, tmp_path, args, origins, url):
    settings.HOMEHUB_STATE_DIRS = [tmp_path]
    settings.CSRF_TRUSTED_ORIGINS = origins
    assert f"Log in at {url} as admin" in run(*args)[0]
    assert f"Log in at {url} with your existing account" in run(*args)[0]


def test_make_run_tells_ensure_admin_where_it_serves():
    dry = subprocess.run(
        ["make", "-n", "run", "demo", "HOST=0.0.0.0", "PORT=9000"], cwd=ROOT, capture_output=True, text=True
    )
    lines = [line for line in dry.stdout.splitlines() if "ensure_admin" in line]
    assert len(lines) == 2 and all(line.endswith("ensure_admin --host 0.0.0.0 --port 9000") for line in lines)


@pytest.mark.live
def test_as_a_deployment_runs_it(live_env, tmp_path, unwritable):
    """`manage.py ensure_admin` in a process of its own, its state folder refused: exit 0, the
    password on stdout before the warning, and it logs in."""
    env = {**live_env, "HOMEHUB_STATE_DIR": str(unwritable), "DJANGO_CSRF_TRUSTED_ORIGINS": ""}
    env.pop("HOMEHUB_ADMIN_PASSWORD", None)
    in_project = ROOT / ".homehub-admin-password"
    proc = run_process(env, "--port", "8001")
    assert proc.returncode == 0, proc.stderr
    assert "Log in at http://127.0.0.1:8001/ as admin" in proc.stdout
    assert "No copy of the password was kept" in proc.stderr
    password = printed_password(proc.stdout)
    assert logs_in(password)
    # Not written there (another pass of the suite, beside this one, may keep its own copy there).
    assert not in_project.exists() or in_project.read_text() != password + "\n"


@pytest.mark.live
def test_run_as_root_with_the_example_environment_it_keeps_the_copy_in_the_state_folder(live_env, tmp_path):
    """The rehearsal's slip: run as root (who may write the code folder), the copy goes to the
    deployment's state folder, mode 600, never to the code folder."""
    from tests.deploy_support import env_example

    assert env_example()["HOMEHUB_STATE_DIR"] == "/var/lib/homehub"  # where DEPLOY.md keeps state
    state = tmp_path / "var-lib-homehub"  # the example's folder, here
    state.mkdir()
    env = {**live_env, "HOMEHUB_STATE_DIR": str(state), "DJANGO_CSRF_TRUSTED_ORIGINS": ""}
    env.pop("HOMEHUB_ADMIN_PASSWORD", None)
    in_project = ROOT / ".homehub-admin-password"
    proc = run_process(env)
    assert proc.returncode == 0, proc.stderr
    kept = state / ".homehub-admin-password"
    assert kept.read_text() == printed_password(proc.stdout) + "\n"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert f"kept in {kept}, readable by this user only" in proc.stdout
    # Not written there (another pass of the suite, beside this one, may keep its own copy there).
    assert not in_project.exists() or in_project.read_text() != kept.read_text()

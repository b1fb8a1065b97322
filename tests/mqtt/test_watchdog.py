"""The worker's systemd pings (devices/mqtt/watchdog.py) never block its event loop: a
notification socket whose reader has fallen behind holds only `net.unix.max_dgram_qlen`
datagrams (10 by default), and a blocking send then waited for ever, with the loop it ran on
(no discovery handled, not even SIGTERM: the deployment rehearsal's worker killed at stop)."""

import socket
import time

from devices.mqtt.watchdog import notify


def test_pings_to_a_reader_that_fell_behind_are_dropped_not_waited_for(tmp_path, monkeypatch):
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as systemd:
        systemd.bind(str(path))
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        started = time.monotonic()
        sent = [notify("WATCHDOG=1") for _ in range(200)]  # nobody reads: the queue fills
        assert time.monotonic() - started < 5
        assert sent[0] is True and sent[-1] is False  # the first went out; past the queue, dropped
        systemd.settimeout(1)
        assert systemd.recv(100) == b"WATCHDOG=1"
        assert notify("WATCHDOG=1") is True  # once read, pings go out again


def test_no_notification_socket_means_no_systemd(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify("READY=1") is False

"""The coordinator from Python: hostile clients are refused and it keeps serving."""

import json
import socket
import struct

import pytest

from sparktf import _native, errors

TOKEN = "a" * 32


def frame(msg_type, payload, magic=0x31465453, version=1, length=None):
    n = len(payload) if length is None else length
    return struct.pack("<IHHI", magic, version, msg_type, n) + payload


def send_and_read(port, data):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)


@pytest.fixture
def coordinator():
    c = _native.Coordinator(2, TOKEN, bind_host="127.0.0.1")
    yield c
    c.shutdown()


def error_of(reply):
    magic, version, msg_type, n = struct.unpack("<IHHI", reply[:12])
    assert msg_type == 3, msg_type  # ERROR, then the connection closed
    return json.loads(reply[12:12 + n])


def test_hostile_connections_are_refused(coordinator):
    port = coordinator.port
    assert "token" in error_of(send_and_read(port, frame(1, b"wrong")))["message"]
    assert "token" in error_of(send_and_read(port, frame(60, b"{}")))["message"]
    assert "magic" in error_of(send_and_read(port, b"GET / HTTP/1.1\r\n\r\n"))["message"]
    assert "version" in error_of(send_and_read(port, frame(1, TOKEN.encode(), version=9)))[
        "message"]
    oversized = frame(1, TOKEN.encode()) + frame(10, b"", length=1 << 30)
    reply = send_and_read(port, oversized)
    assert "exceeds the limit" in error_of(reply[14:])["message"]  # after WELCOME ({})
    bad_json = frame(1, TOKEN.encode()) + frame(10, b"{not json")
    assert "REGISTER needs" in error_of(send_and_read(port, bad_json)[14:])["message"]
    status = json.loads(_native.get_status(f"127.0.0.1:{port}", TOKEN))
    assert status["rejected_connections"] == 6 and status["registered"] == 0
    with pytest.raises(errors.Unauthenticated):
        _native.get_status(f"127.0.0.1:{port}", "nope")


def test_reservation_timeout_names_missing_executors(coordinator):
    assert coordinator.wait_reserved(0.2) is False
    assert "missing executors: 0, 1" in coordinator.last_wait_error()


def test_the_status_endpoint_serves_the_page_files_and_refuses_an_address_not_here():
    import urllib.request

    from sparktf import status

    read_only = status.read_only_token(TOKEN)
    assert len(read_only) == 32 and read_only != TOKEN and read_only == status.read_only_token(TOKEN)
    assets = status.page_assets()
    assert set(assets) == {"/index.html", "/static/app.js", "/static/style.css"}
    c = _native.Coordinator(2, TOKEN, status_hosts=["127.0.0.1"], status_tokens=[read_only],
                            status_assets=assets)
    try:
        base = f"http://127.0.0.1:{c.status_port}"
        with urllib.request.urlopen(f"{base}/static/app.js?token={read_only}", timeout=5) as r:
            assert r.read() == assets["/static/app.js"][1]
        request = urllib.request.Request(f"{base}/api/status",
                                         headers={"Authorization": f"Bearer {read_only}"})
        with urllib.request.urlopen(request, timeout=5) as r:
            served = json.loads(r.read())
        assert served["num_nodes"] == 2 and served["nodes"] == []
        table = str(status.ClusterStatus(served))
        assert table.startswith("sparktf cluster: 0 of 2 nodes registered") and "NODE" in table
    finally:
        c.shutdown()
    with pytest.raises(errors.Unavailable, match="status server: cannot listen on 192.0.2.99"):
        _native.Coordinator(2, TOKEN, status_hosts=["192.0.2.99"], status_tokens=[read_only])
    with pytest.raises(errors.InvalidArgument, match="needs a token"):
        _native.Coordinator(2, TOKEN, status_hosts=["127.0.0.1"])

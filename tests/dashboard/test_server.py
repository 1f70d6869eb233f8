"""How ``python -m dashboard`` serves (dashboard/_server.py): the address by mode, safe
Streamlit options, the httpOnly visitor cookie set by the server."""

from __future__ import annotations

import asyncio

import pytest

from dashboard import _server


@pytest.mark.parametrize(
    ("args", "shared", "address"),
    [
        ([], False, "127.0.0.1"),
        ([], True, "0.0.0.0"),
        (["--server.address=localhost"], False, "localhost"),
        (["--server.address", "::1"], False, "::1"),
        (["--server.address=10.0.0.5"], True, "10.0.0.5"),
    ],
)
def test_the_address_follows_the_mode(args: list[str], shared: bool, address: str) -> None:
    out = _server.server_args(args, shared=shared)
    assert _server._option(out, "server.address") == address
    assert "--client.showErrorDetails=none" in out
    assert f"--server.maxUploadSize={_server.UPLOAD_MB}" in out


@pytest.mark.parametrize("address", ["0.0.0.0", "192.168.1.7", "::", "example.org"])
def test_a_personal_server_never_listens_on_a_network(address: str) -> None:
    with pytest.raises(_server.LaunchError, match="shared mode"):
        _server.server_args([f"--server.address={address}"], shared=False)


def test_options_given_are_kept() -> None:
    out = _server.server_args(
        ["--client.showErrorDetails=full", "--server.maxUploadSize=5"], shared=False
    )
    assert out.count("--client.showErrorDetails=full") == 1
    assert not any(a.startswith("--client.showErrorDetails=none") for a in out)
    assert "--server.maxUploadSize=5" in out and len(out) == 3


def _respond(headers: list[tuple[bytes, bytes]], content_type: bytes, scheme: str = "http"):
    sent: list[dict] = []

    async def app(scope, receive, send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", content_type)],
            }
        )
        await send({"type": "http.response.body", "body": b"x"})

    async def send(message) -> None:
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": "http", "headers": headers, "scheme": scheme}
    asyncio.run(_server.VisitorCookie(app)(scope, receive, send))
    return [v.decode() for k, v in sent[0]["headers"] if k == b"set-cookie"]


def test_html_pages_set_the_visitor_cookie_httponly() -> None:
    (cookie,) = _respond([], b"text/html; charset=utf-8")
    name, _, rest = cookie.partition("=")
    value = rest.split(";")[0]
    token = _server.verified_token(value)
    assert name == _server.VISITOR_COOKIE and token and _server.TOKEN.fullmatch(token)
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    # the browser's own token is renewed (now httpOnly), a malformed or unsigned one replaced
    mine = _server.signed("a" * 32)
    (again,) = _respond([(b"cookie", f"x=1; dtpbo_visitor={mine}".encode())], b"text/html")
    assert again.startswith(f"dtpbo_visitor={mine};")
    (forged,) = _respond([(b"cookie", f"dtpbo_visitor={'a' * 32}".encode())], b"text/html")
    assert "a" * 32 not in forged
    (bad,) = _respond([(b"cookie", b"dtpbo_visitor=<script>")], b"text/html")
    assert "<script>" not in bad
    # over HTTPS (or behind a proxy saying so) the cookie is Secure
    assert "Secure" in _respond([], b"text/html", scheme="https")[0]
    assert "Secure" in _respond([(b"x-forwarded-proto", b"https")], b"text/html")[0]


def test_other_responses_set_no_cookie() -> None:
    assert _respond([], b"application/javascript") == []
    assert _respond([], b"application/json") == []


def test_the_checkouts_streamlit_config_parses_with_its_settings() -> None:
    """A duplicated key makes Streamlit ignore the whole file ("Cannot overwrite a
    value"): no file watcher off, no error details off, no postScriptGC off."""
    import tomllib
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"
    cfg = tomllib.loads(path.read_text())
    assert cfg["server"]["fileWatcherType"] == "none"
    assert cfg["server"]["maxUploadSize"] == _server.UPLOAD_MB
    assert cfg["client"]["showErrorDetails"] == "none"
    assert cfg["runner"]["postScriptGC"] is False


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:8501", True),
        ("localhost:8501", True),
        ("LOCALHOST", True),
        ("[::1]:8501", True),
        ("[::1]", True),
        ("127.0.0.2:80", True),  # all of 127/8 is this machine
        ("evil.example", False),
        ("evil.example:8501", False),
        ("127.0.0.1.evil.example:8501", False),
        ("localhost.evil.example", False),
        ("localhost.", False),
        ("0.0.0.0:8501", False),
        ("192.168.1.7:8501", False),
        ("user@127.0.0.1:8501", False),
        ("127.0.0.1:8501/x", False),
        ("127.0.0.1:port", False),
        ("", False),
    ],
)
def test_loopback_host_names(host: str, ok: bool) -> None:
    assert _server.loopback_host(host) is ok


@pytest.mark.parametrize(
    ("origin", "ok"),
    [
        ("http://127.0.0.1:8501", True),
        ("http://localhost:8501", True),
        ("https://[::1]:8501", True),
        ("http://evil.example", False),
        ("http://evil.example:8501", False),
        ("null", False),
        ("file://", False),
        ("ftp://127.0.0.1", False),
    ],
)
def test_loopback_origins(origin: str, ok: bool) -> None:
    assert _server.loopback_origin(origin) is ok


def _guarded(kind: str, headers: list[tuple[bytes, bytes]]) -> tuple[bool, list[dict]]:
    """Run :class:`_server.LoopbackOnly` on one request: whether the app behind it ran,
    and what was sent."""
    reached: list[bool] = []
    sent: list[dict] = []

    async def app(scope, receive, send) -> None:
        reached.append(True)

    async def send(message) -> None:
        sent.append(message)

    async def receive():
        return {"type": "websocket.connect" if kind == "websocket" else "http.request"}

    scope = {"type": kind, "headers": headers}
    asyncio.run(_server.LoopbackOnly(app)(scope, receive, send))
    return bool(reached), sent


def test_a_personal_server_refuses_other_host_names_and_origins() -> None:
    """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 sends
    ``Host: evil.example``; a page of another site opening the websocket sends its
    ``Origin``. Both are refused (403; a websocket closed before it is accepted, which the
    server answers with 403); loopback names pass, as does a request without either."""
    ok = [(b"host", b"127.0.0.1:8501"), (b"origin", b"http://localhost:8501")]
    for kind in ("http", "websocket"):
        assert _guarded(kind, ok) == (True, [])
        assert _guarded(kind, []) == (True, [])
    reached, sent = _guarded("http", [(b"host", b"evil.example:8501")])
    assert not reached and sent[0]["status"] == 403 and b"127.0.0.1" in sent[1]["body"]
    reached, sent = _guarded("websocket", [(b"host", b"evil.example:8501")])
    assert not reached and sent == [{"type": "websocket.close", "code": 1008}]
    bad_origin = [(b"host", b"127.0.0.1:8501"), (b"origin", b"http://evil.example")]
    assert _guarded("websocket", bad_origin)[0] is False
    assert _guarded("http", bad_origin)[1][0]["status"] == 403
    # the lifespan (and any other kind of scope) passes
    assert _guarded("lifespan", [(b"host", b"evil.example")])[0] is True


def test_only_a_personal_server_installs_the_loopback_check(monkeypatch) -> None:
    from starlette.middleware import Middleware
    from streamlit.web.server.starlette import starlette_app

    def streamlits() -> list[Middleware]:  # Streamlit's own stack (a launcher test in
        return [Middleware(dict)]  # this process may have wrapped the real one already)

    personal = [_server.LoopbackOnly, _server.VisitorCookie]
    for shared, ours in ((False, personal), (True, [_server.VisitorCookie])):
        monkeypatch.setattr(starlette_app, "create_streamlit_middleware", streamlits)
        assert _server._add_middleware(shared)
        stack = [m.cls for m in starlette_app.create_streamlit_middleware()]
        assert stack == [*ours, dict]


def test_ended_sessions_give_back_their_uploads(monkeypatch) -> None:
    """Streamlit drops a closed tab's session from its storage after
    ``server.disconnectedSessionTTL`` without shutting it down, so its uploads stayed in
    the server for good; the sweep frees the uploads of every session the session
    manager no longer lists (and keeps those of live and stored sessions)."""
    from types import SimpleNamespace

    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.uploaded_file_manager import UploadedFileRec

    uploads = MemoryUploadedFileManager("/_stcore/upload_file")
    for sid in ("live", "stored", "ended"):
        uploads.add_file(sid, UploadedFileRec(f"f-{sid}", "x.csv", "text/csv", b"x" * 1000))
    sessions = [SimpleNamespace(session=SimpleNamespace(id=s)) for s in ("live", "stored")]
    cleared: list[str] = []
    media = SimpleNamespace(clear_session_refs=cleared.append, remove_orphaned_files=lambda: None)
    runtime = SimpleNamespace(
        _session_mgr=SimpleNamespace(list_sessions=lambda: list(sessions)),
        uploaded_file_mgr=uploads,
        media_file_mgr=media,
        dataframe_source_mgr=SimpleNamespace(clear_all_for_session=lambda sid: None),
    )
    monkeypatch.setattr(_server, "_SEEN", {})
    assert _server.sweep_ended_sessions(runtime) == 1000  # "ended": listed by no manager
    assert set(uploads.file_storage) == {"live", "stored"} and cleared == ["ended"]
    sessions.pop()  # the stored one expires
    assert _server.sweep_ended_sessions(runtime) == 1000
    assert set(uploads.file_storage) == {"live"}
    assert _server.sweep_ended_sessions(runtime) == 0


def test_sessions_whose_time_is_over_are_let_go_on_a_quiet_server(monkeypatch) -> None:
    """Streamlit's session storage stops listing a closed tab's session when its time is
    over but keeps the object (its state: an upload's bytes) until another tab closes; the
    sweep drops it then and there and shuts it down, as Streamlit does for a session it
    closes, so the state is garbage."""
    import gc
    import weakref
    from types import SimpleNamespace

    from streamlit.runtime.memory_session_storage import MemorySessionStorage
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.session_manager import SessionInfo

    shut: list[str] = []

    class Session:
        def __init__(self, sid: str) -> None:
            self.id, self.state = sid, bytearray(10**6)

        def shutdown(self) -> None:
            shut.append(self.id)

    now = [0.0]
    storage = MemorySessionStorage(maxsize=8, ttl_seconds=120)
    storage._cache._timer = lambda: now[0]  # the storage's clock, for the test
    closed = Session("closed")
    storage.save(SessionInfo(client=None, session=closed))
    runtime = SimpleNamespace(
        _session_mgr=SimpleNamespace(
            _session_storage=storage, list_sessions=lambda: storage.list()
        ),
        uploaded_file_mgr=MemoryUploadedFileManager("/_stcore/upload_file"),
        media_file_mgr=SimpleNamespace(
            clear_session_refs=lambda sid: None, remove_orphaned_files=lambda: None
        ),
        dataframe_source_mgr=SimpleNamespace(clear_all_for_session=lambda sid: None),
    )
    monkeypatch.setattr(_server, "_SEEN", {})
    _server.sweep_ended_sessions(runtime)
    assert shut == []  # stored: its tab may come back within the 120 s
    now[0] = 121.0  # its time is over; nothing writes to the storage on a quiet server
    gone = weakref.ref(closed)
    del closed
    _server.sweep_ended_sessions(runtime)
    gc.collect()
    assert len(storage._cache._data) == 0 and shut == ["closed"] and gone() is None

"""How ``python -m dashboard`` serves: the address, error details, uploads, the visitor
cookie and stopping (used by :mod:`dashboard.__main__`; standard library, Streamlit and
:mod:`dashboard._memory`).

**Safe by default.** A personal server (``make run``) listens on 127.0.0.1 only: it
trusts its visitor (typed data paths, the LLM endpoint, benchmark runs), so nobody else
on the network may reach it, and a non-loopback ``--server.address`` is refused. Shared
mode (``DTPBO_SHARED_SERVER=1``, ``make serve``) is what opens the network (0.0.0.0
unless an address is given): there those inputs are server configuration.

**Errors without internals.** Streamlit's ``client.showErrorDetails`` is ``none``: an
exception that escapes the pages' own handler (``dashboard._ui.error_boundary``) shows
Streamlit's generic sentence, never a traceback.

**Bounded uploads.** ``server.maxUploadSize`` is 32 MB (an own study is at most 20 MB,
:mod:`data_loaders.limits`; Streamlit's default is 200 MB).

**The visitor cookie is set by the server, httpOnly.** Every HTML page the server sends
carries ``Set-Cookie: dtpbo_visitor=<token>; HttpOnly; SameSite=Lax`` (:class:`VisitorCookie`,
an ASGI middleware added to Streamlit's own): the browser sends it with the websocket
handshake, where the page reads it (``st.context.cookies``), and no script can read it.
A server started otherwise (``streamlit run``) falls back to the page's script cookie.
The cookie is ``<token>.<signature>`` (an HMAC of the token with the server's secret,
:func:`server_secret`): a cookie the server did not issue (forged, or from before the
signature) is not kept, the browser gets a new token (:func:`verified_token`).

**Loopback names only (personal mode).** A personal server answers only requests whose
``Host`` header names this machine (``127.0.0.1``, ``localhost``, ``[::1]``, any port)
and whose ``Origin``, when there is one, does too (:class:`LoopbackOnly`, an ASGI
middleware before Streamlit's own): anything else gets 403, the websocket included. A web
page the user visits elsewhere cannot drive the trusted single-user UI by DNS rebinding
(its name resolving to 127.0.0.1: the browser then sends its own name as ``Host``), nor
open the websocket from its own origin. Shared mode, behind its reverse proxy, names its
hosts itself (``server.allowedHosts``, docs/shared-server.md).

**SIGTERM stops the server within** :data:`STOP_GRACE_S` **seconds.** The stop hooks
run first (:func:`on_stop`: the job service kills its worker processes, so no worker
outlives the server), then Streamlit's own handler stops the server; if the process is
still alive after the grace period (a page's computation holding the interpreter),
:mod:`faulthandler`'s watchdog thread, which needs no interpreter lock, writes every
thread's stack to the log and ends the process.
"""

from __future__ import annotations

import base64
import faulthandler
import hashlib
import hmac
import http.cookies
import ipaddress
import os
import re
import secrets
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from dashboard import _memory
from data_loaders.access import data_home

__all__ = [
    "COOKIE_AGE_S",
    "LOOPBACK",
    "STOP_GRACE_S",
    "TOKEN",
    "TRUSTED_PROXIES_ENV",
    "UPLOAD_MB",
    "VISITOR_COOKIE",
    "LaunchError",
    "LoopbackOnly",
    "VisitorCookie",
    "address_id",
    "client_ip",
    "install",
    "on_stop",
    "server_args",
    "server_secret",
    "signed",
    "sweep_ended_sessions",
    "trusted_proxies",
    "verified_token",
]

#: Cookie holding a browser's visitor token (the store keeps only its hash).
VISITOR_COOKIE = "dtpbo_visitor"
#: What a visitor token looks like (anything else in the cookie is replaced).
TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")
#: What the cookie holds: a token, a dot and its signature (:func:`signed`).
SIGNED = re.compile(r"([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{22})")
#: Environment variable: the server's secret (signs visitor cookies, keys the hashes of
#: network addresses); default a random one kept in the data folder (``.server-secret``,
#: shared by the processes of one data folder).
SECRET_ENV = "DTPBO_SERVER_SECRET"
#: Seconds the browser keeps the visitor cookie (one year).
COOKIE_AGE_S = 365 * 24 * 3600
#: The address a personal server listens on.
LOOPBACK = "127.0.0.1"
#: The address shared mode listens on unless one is given.
ALL_INTERFACES = "0.0.0.0"
#: Largest upload Streamlit accepts, in MB.
UPLOAD_MB = 32
#: Seconds after SIGTERM (or SIGINT) before the process is ended whatever it is doing.
STOP_GRACE_S = 4.0


class LaunchError(ValueError):
    """The launcher refuses its options (``python -m dashboard`` exits with status 2 and
    the reason on stderr)."""


def _option(args: Sequence[str], name: str) -> str | None:
    """The value of ``--name=value`` or ``--name value`` in ``args`` (the last one)."""
    value = None
    for k, a in enumerate(args):
        if a == f"--{name}" and k + 1 < len(args):
            value = args[k + 1]
        elif a.startswith(f"--{name}="):
            value = a.split("=", 1)[1]
    return value


def _loopback(address: str) -> bool:
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def server_args(args: Sequence[str], *, shared: bool) -> list[str]:
    """Streamlit's options for the dashboard: ``args`` plus the safe defaults not given.

    Default mode listens on 127.0.0.1 and refuses a non-loopback ``--server.address``
    (:class:`LaunchError`); shared mode listens on 0.0.0.0 unless an address is given.
    Error details are off and uploads capped unless ``args`` say otherwise.
    """
    out = list(args)
    address = _option(out, "server.address")
    if address is None:
        out.append(f"--server.address={ALL_INTERFACES if shared else LOOPBACK}")
    elif not shared and not _loopback(address):
        raise LaunchError(
            f"refusing --server.address={address}: a personal server (make run) listens on "
            f"{LOOPBACK} only, because it trusts its visitor with server paths. To serve a "
            "network, use shared mode: DTPBO_SHARED_SERVER=1 (make serve; "
            "docs/shared-server.md)."
        )
    try:
        trusted_proxies()  # a wrong proxy setting stops the launch, not an import
    except ValueError as exc:
        raise LaunchError(str(exc)) from None
    if _option(out, "client.showErrorDetails") is None:
        out.append("--client.showErrorDetails=none")
    if _option(out, "server.maxUploadSize") is None:
        out.append(f"--server.maxUploadSize={UPLOAD_MB}")
    return out


# ----------------------------------------------------------------------------- the cookie
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _header(scope: Scope, name: bytes) -> str:
    for k, v in scope.get("headers") or ():
        if k.lower() == name:
            return v.decode("latin-1")
    return ""


_SECRET: list[bytes] = []
_SECRET_LOCK = threading.Lock()


def server_secret() -> bytes:
    """The server's secret: ``$DTPBO_SERVER_SECRET``, else 32 random bytes created once in
    the data folder (``$DTPBO_DATA_HOME/.server-secret``, mode 0600; every process of one
    data folder reads the same), else (a read-only folder) one for this process."""
    with _SECRET_LOCK:
        if _SECRET:
            return _SECRET[0]
        env = os.environ.get(SECRET_ENV, "").strip()
        secret = env.encode() if env else _stored_secret()
        _SECRET.append(secret)
        return secret


def _stored_secret() -> bytes:
    path = data_home() / ".server-secret"
    for _ in range(3):
        try:
            secret = path.read_bytes()
            if len(secret) >= 32:
                return secret
        except OSError:
            pass
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process is writing it: read it again
            continue
        except OSError:
            break
        secret = secrets.token_bytes(32)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secret)
        return secret
    return secrets.token_bytes(32)


def _mac(kind: str, value: str) -> bytes:
    return hmac.new(server_secret(), f"{kind}:{value}".encode(), hashlib.sha256).digest()


def signed(token: str) -> str:
    """The cookie value of a visitor token: ``<token>.<signature>``."""
    sig = base64.urlsafe_b64encode(_mac("visitor", token)[:16]).decode().rstrip("=")
    return f"{token}.{sig}"


def verified_token(value: str | None) -> str | None:
    """The token of a cookie value this server signed (:func:`signed`), else ``None``: a
    forged or unsigned value is never taken as a visitor's identity."""
    m = SIGNED.fullmatch(value or "")
    if m is None:
        return None
    return m.group(1) if hmac.compare_digest(signed(m.group(1)), m.group(0)) else None


def address_id(address: str) -> str:
    """A network address as the keyed hash the per-address limits count (never the
    address itself: an IPv4 hash without a key is reversed by trying 2**32): IPv4 by
    address, IPv6 by its /64 (one host's addresses), an IPv4-mapped IPv6 as its IPv4;
    ``""`` for none."""
    address = (address or "").strip().strip("[]")
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        norm = address.lower()
    else:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        norm = (
            str(ipaddress.ip_network(f"{ip}/64", strict=False))
            if isinstance(ip, ipaddress.IPv6Address)
            else str(ip)
        )
    return _mac("address", norm).hex()[:32]


#: Environment variable: the reverse proxies whose ``X-Forwarded-For`` is believed,
#: comma-separated addresses or networks (``127.0.0.1``, ``10.0.0.0/8``, ``::1``); empty
#: (the default): none, every visitor counts by the address it connects from.
TRUSTED_PROXIES_ENV = "DTPBO_TRUSTED_PROXIES"
#: The address a loopback peer counts as (Streamlit gives no address for one).
LOOPBACK_PEER = "127.0.0.1"
#: The most ``X-Forwarded-For`` entries read (a proxy chain is short; a longer header is
#: a client's invention past that point).
MAX_FORWARDED = 16

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_proxies(value: str | None = None) -> tuple[_Network, ...]:
    """The networks of :data:`TRUSTED_PROXIES_ENV` (``value``: instead of the
    environment's); ``()`` when unset.

    Raises
    ------
    ValueError
        For an entry that is no address or network, naming it (the server refuses to
        start rather than trust the wrong proxies).
    """
    text = os.environ.get(TRUSTED_PROXIES_ENV, "") if value is None else value
    out = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        try:
            out.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(
                f"${TRUSTED_PROXIES_ENV}: {item[:60]!r} is no address or network (write "
                "e.g. 127.0.0.1 or 10.0.0.0/8, comma-separated)"
            ) from None
    return tuple(out)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(text.strip().strip("[]").split("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _trusted(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address, proxies: Sequence[_Network]
) -> bool:
    return any(ip.version == n.version and ip in n for n in proxies)


def client_ip(peer: str | None, forwarded: str, proxies: Sequence[_Network] = ()) -> str:
    """The address a visitor counts by (the per-address quotas): the connection's peer
    (``None``, as Streamlit gives a loopback peer: :data:`LOOPBACK_PEER`; the launcher
    keeps Streamlit's server from rewriting it from the header, :func:`install`), unless the peer
    is one of the trusted ``proxies``; then the last ``X-Forwarded-For`` entry that is no
    trusted proxy (the one the nearest proxy appended; entries before it are whatever the
    client sent). An entry that is no address, or a header without one, counts as the
    proxy itself: every visitor gets a cap. Never ``""``."""
    peer_ip = _ip(peer or LOOPBACK_PEER) or _ip(LOOPBACK_PEER)
    assert peer_ip is not None
    if not _trusted(peer_ip, proxies):
        return str(peer_ip)
    entries = (forwarded or "").split(",")[-MAX_FORWARDED:]
    for entry in reversed(entries):
        ip = _ip(entry)
        if ip is None:
            break  # not an address: nothing before it is believed
        if not _trusted(ip, proxies):
            return str(ip)
    return str(peer_ip)


def forwarded_for(header: str) -> str:
    """The last entry of an ``X-Forwarded-For`` header, ``""`` for none (the address a
    proxy appends; believed only from a trusted proxy, :func:`client_ip`)."""
    parts = [p.strip() for p in (header or "").split(",") if p.strip()]
    return parts[-1] if parts else ""


def cookie_token(cookie_header: str) -> str | None:
    """The visitor token in a ``Cookie`` header, when it has one of the right form."""
    jar: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
    try:
        jar.load(cookie_header)
    except http.cookies.CookieError:
        return None
    morsel = jar.get(VISITOR_COOKIE)
    return verified_token(morsel.value if morsel is not None else None)


def set_cookie_value(token: str, *, secure: bool) -> str:
    """The ``Set-Cookie`` value of a visitor token (signed, :func:`signed`): httpOnly,
    SameSite=Lax, one year."""
    return (
        f"{VISITOR_COOKIE}={signed(token)}; Path=/; Max-Age={COOKIE_AGE_S}; HttpOnly; "
        "SameSite=Lax" + ("; Secure" if secure else "")
    )


class VisitorCookie:
    """ASGI middleware: every HTML response carries the visitor cookie, httpOnly (the
    browser's own token renewed when this server signed it, else a new one), so the
    websocket handshake that follows brings it to the page and no script can read it.
    ``Secure`` over HTTPS (also behind a proxy that says ``X-Forwarded-Proto: https``)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        token = cookie_token(_header(scope, b"cookie")) or secrets.token_urlsafe(24)
        secure = scope.get("scheme") == "https" or (
            _header(scope, b"x-forwarded-proto").lower() == "https"
        )

        async def send_with_cookie(message: Message) -> None:
            if message.get("type") == "http.response.start":
                headers = list(message.get("headers") or [])
                ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if ctype.startswith(b"text/html"):
                    value = set_cookie_value(token, secure=secure).encode("latin-1")
                    headers.append((b"set-cookie", value))
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


# ----------------------------------------------------------------------------- loopback names
def loopback_host(host: str) -> bool:
    """Does a ``Host`` header (``name[:port]``) name this machine: ``localhost``, a
    loopback address (``127.0.0.1``, ``[::1]``), any port? Nothing else (no user part,
    path or malformed port)."""
    try:
        parts = urllib.parse.urlsplit(f"//{host.strip()}")
        _ = parts.port  # a malformed port raises
    except ValueError:
        return False
    name = parts.hostname
    if not name or parts.username is not None or parts.password is not None:
        return False
    if parts.path or parts.query or parts.fragment:
        return False
    return _loopback(name) and not name.strip().endswith(".")


def loopback_origin(origin: str) -> bool:
    """Is an ``Origin`` header a page of this machine (``http(s)://`` and a loopback
    name, :func:`loopback_host`)? ``null`` (a sandboxed frame, a file) is not."""
    parts = urllib.parse.urlsplit(origin.strip())
    return parts.scheme in ("http", "https") and loopback_host(parts.netloc)


def loopback_request(scope: Scope) -> bool:
    """Do a request's ``Host`` and ``Origin`` headers name this machine (either may be
    missing: no browser leaves out the ``Host``, and a request without ``Origin`` comes
    from no other page)?"""
    host = _header(scope, b"host")
    origin = _header(scope, b"origin")
    return (not host or loopback_host(host)) and (not origin or loopback_origin(origin))


#: The body of the 403 a personal server sends to another host name.
REFUSED = (
    b"403 Forbidden: this personal DT-PBO Explorer answers only at http://127.0.0.1 or "
    b"http://localhost (a shared server: DTPBO_SHARED_SERVER=1, docs/shared-server.md).\n"
)


class LoopbackOnly:
    """ASGI middleware of a personal server: an HTTP request or a websocket whose
    ``Host`` or ``Origin`` names another host is refused with 403 (:func:`loopback_request`;
    a websocket is closed before it is accepted, which the server answers with 403), so a
    page of another site cannot reach the server by DNS rebinding."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket") or loopback_request(scope):
            await self.app(scope, receive, send)
            return
        if kind == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = [(b"content-type", b"text/plain; charset=utf-8")]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": REFUSED})


def _add_middleware(shared: bool) -> bool:
    """Put :class:`VisitorCookie` (and, on a personal server, :class:`LoopbackOnly`
    before it) in front of Streamlit's middleware; ``False`` when this Streamlit has no
    such hook (the page then falls back to its script cookie)."""
    try:
        from starlette.middleware import Middleware
        from streamlit.web.server.starlette import starlette_app
    except ImportError:
        return False
    make = getattr(starlette_app, "create_streamlit_middleware", None)
    if make is None or getattr(make, "_dtpbo", False):
        return make is not None
    guard = [] if shared else [Middleware(LoopbackOnly)]

    def with_cookie() -> list[Any]:
        return [*guard, Middleware(VisitorCookie), *make()]

    with_cookie._dtpbo = True  # type: ignore[attr-defined]
    starlette_app.create_streamlit_middleware = with_cookie
    return True


# ----------------------------------------------------------------------------- stopping
def _arm_stop_watchdog(grace: float = STOP_GRACE_S) -> None:
    """End the process ``grace`` seconds from now unless it has exited by then (the
    faulthandler thread runs without the interpreter lock, so a busy page cannot hold it
    back); every thread's stack goes to stderr first (the server's log)."""
    faulthandler.dump_traceback_later(grace, exit=True, file=sys.stderr)


_STOP_HOOKS: list[Callable[[], None]] = []


def on_stop(hook: Callable[[], None]) -> None:
    """Run ``hook`` (quick, no waiting) when SIGTERM or SIGINT stops the server, before
    Streamlit's own handler: the job service kills its workers there. Once per hook."""
    if hook not in _STOP_HOOKS:
        _STOP_HOOKS.append(hook)


def run_stop_hooks() -> None:
    """Run every :func:`on_stop` hook (an exception in one does not keep the others)."""
    for hook in list(_STOP_HOOKS):
        try:
            hook()
        except Exception:
            pass


def _wrap_signal_handlers() -> bool:
    """Arm :func:`_arm_stop_watchdog` whenever Streamlit's SIGTERM/SIGINT handler runs."""
    try:
        from streamlit.web import bootstrap
    except ImportError:
        return False
    setup = getattr(bootstrap, "_set_up_signal_handler", None)
    if setup is None or getattr(setup, "_dtpbo", False):
        return setup is not None

    def with_watchdog(server: Any) -> None:
        setup(server)
        for sig in (signal.SIGTERM, signal.SIGINT):
            inner = signal.getsignal(sig)
            if not callable(inner):
                continue

            def handler(signum: int, frame: Any, inner: Callable[..., Any] = inner) -> None:
                _arm_stop_watchdog()
                run_stop_hooks()
                inner(signum, frame)

            signal.signal(sig, handler)

    with_watchdog._dtpbo = True  # type: ignore[attr-defined]
    bootstrap._set_up_signal_handler = with_watchdog
    return True


# ----------------------------------------------------------------------------- ended sessions
#: Seconds between two sweeps of the browser sessions Streamlit has let go of.
SESSION_SWEEP_S = 30.0
_SEEN: dict[str, Any] = {}  # session id -> its AppSession, as of the last sweep


def sweep_ended_sessions(runtime: Any = None) -> int:
    """Free what Streamlit keeps of browser sessions it no longer holds; the bytes of the
    uploads freed.

    A closed tab's session is kept ``server.disconnectedSessionTTL`` seconds (120) for a
    reconnect, then dropped from Streamlit's session storage without being shut down: its
    uploads (a 12 MB choice file each), its media files and its data frames' sources
    stayed in the server for good (20 imports of 12 MB files: 466 MB -> 1,063 MB, still
    1,063 MB idle; docs/shared-server.md). Each sweep releases them for the sessions that
    left the session manager since the last one, and any upload whose session it no
    longer knows. Uses Streamlit's runtime (``Runtime.instance()``, or ``runtime``);
    nothing before it runs."""
    try:
        from streamlit.runtime import Runtime

        if runtime is None and not Runtime.exists():
            return 0
        rt = runtime if runtime is not None else Runtime.instance()
        _reap_expired(rt._session_mgr)
        live = {info.session.id: info.session for info in rt._session_mgr.list_sessions()}
    except Exception:  # another Streamlit: nothing to sweep with
        return 0
    uploads = rt.uploaded_file_mgr
    storage = getattr(uploads, "file_storage", {})
    freed = 0
    ended = (set(_SEEN) | set(storage)) - set(live)
    for sid in ended:
        freed += sum(len(getattr(f, "data", b"")) for f in storage.get(sid, {}).values())
        uploads.remove_session_files(sid)
        try:
            rt.media_file_mgr.clear_session_refs(sid)
            rt.dataframe_source_mgr.clear_all_for_session(sid)
        except Exception:  # another Streamlit
            pass
        _shut_down(_SEEN.get(sid))
    if ended:
        try:
            rt.media_file_mgr.remove_orphaned_files()
        except Exception:
            pass
        # an ended session is cyclic garbage (its script runner, its widgets' values: an
        # upload's bytes) and the server runs no full collection after its reruns
        # (runner.postScriptGC false): collect it now, then give the pages back
        _memory.trim(collect=True)
    _SEEN.clear()
    _SEEN.update(live)
    return freed


def _reap_expired(session_mgr: Any) -> None:
    """Drop the sessions whose time in Streamlit's session storage is over.

    Its storage (``MemorySessionStorage``, a ``TTLCache``) stops listing a session when
    its ``server.disconnectedSessionTTL`` is over but keeps the object, with its widgets'
    values (an upload's bytes), until the next tab that closes writes to it: on a server
    that fell quiet, 8 visitors who imported 12 MB files left it at 680 MB from 403 MB.
    """
    cache = getattr(getattr(session_mgr, "_session_storage", None), "_cache", None)
    expire = getattr(cache, "expire", None)
    if callable(expire):
        expire()


def _shut_down(session: Any) -> None:
    """Shut an ended session down, as Streamlit does for a stored session it closes
    (its script runner, its state and its uploads' references go)."""
    try:
        if session is not None:
            session.shutdown()
    except Exception:  # already shut down, or another Streamlit
        pass


def _start_session_sweeper() -> bool:
    def sweep() -> None:
        while True:
            time.sleep(SESSION_SWEEP_S)
            try:
                sweep_ended_sessions()
            except Exception:  # never the server's end
                pass

    threading.Thread(target=sweep, name="dtpbo-session-sweep", daemon=True).start()
    return True


def _no_proxy_headers() -> bool:
    """Keep Streamlit's server (uvicorn) from taking a loopback peer's ``X-Forwarded-For``
    as the client's address (its default trusts 127.0.0.1 and ::1: any local client, or a
    proxy that passes the client's header on, would name its own address). The
    dashboard reads the header itself, from the proxies ``$DTPBO_TRUSTED_PROXIES`` names
    only (:func:`client_ip`)."""
    os.environ["FORWARDED_ALLOW_IPS"] = ""  # uvicorn: trust no peer's proxy headers
    return True


def install(*, shared: bool) -> dict[str, bool]:
    """Hook the cookie middleware (on a personal server, ``shared`` false, the loopback
    check before it) and the stop watchdog into Streamlit (before it starts), turn off
    its server's own reading of proxy headers (:func:`_no_proxy_headers`) and start the
    sweep of ended sessions (:func:`sweep_ended_sessions`); which hooks took."""
    return {
        "cookie": _add_middleware(shared),
        "stop": _wrap_signal_handlers(),
        "proxy_headers": _no_proxy_headers(),
        "session_sweep": _start_session_sweeper(),
        "malloc": _memory.tune_malloc(),
    }

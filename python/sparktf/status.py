"""The cluster's status endpoint on the driver: which addresses it listens on, its
read-only token, the page's files, and the status as a table (the C++ core serves and
formats; this module only gathers what Python knows)."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import socket

from sparktf import _native, errors

_PAGE_DIR = os.path.join(os.path.dirname(__file__), "status_page")
_CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                  ".css": "text/css; charset=utf-8"}


def read_only_token(token: str) -> str:
    """The status token derived from the cluster's token: it reads the status endpoint and
    nothing else (it cannot join or steer the cluster, and the cluster token cannot be
    recovered from it)."""
    return hmac.new(token.encode(), b"sparktf status endpoint", hashlib.sha256).hexdigest()[:32]


def page_assets() -> dict:
    """The status page's files, by the path the server serves them at."""
    assets = {}
    for name in sorted(os.listdir(_PAGE_DIR)):
        kind = _CONTENT_TYPES.get(os.path.splitext(name)[1])
        if kind is None:
            continue
        with open(os.path.join(_PAGE_DIR, name), "rb") as f:
            body = f.read()
        path = "/index.html" if name == "index.html" else "/static/" + name
        assets[path] = (kind, body)
    return assets


def _ip_of(host: str) -> str | None:
    """The IP address of `host`, None if it does not resolve."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return socket.gethostbyname(host)
    except OSError:
        return None


def listen_hosts(address, driver_host: str) -> list:
    """The IP addresses to listen on. address None: loopback and the driver's host (as
    Spark's UI is reachable); a string or a list of them: those (host names resolved;
    "0.0.0.0" is every interface)."""
    if address is None:
        hosts = ["127.0.0.1"]
        ip = _ip_of(driver_host)  # a driver host that does not resolve: loopback only
        if ip is not None and not ipaddress.ip_address(ip).is_loopback:
            hosts.append(ip)
        return hosts
    if isinstance(address, str):
        address = [address]
    hosts = []
    for a in address:
        ip = _ip_of(a)
        if ip is None:
            raise errors.InvalidArgument(f"status_address {a!r} is not an IP address or a "
                                         "host name that resolves")
        hosts.append(ip)
    return list(dict.fromkeys(hosts))


def url_host(hosts: list, driver_host: str) -> str:
    """The host to put in the URL: the driver's host when the server listens there (or on
    every interface), else the first address it listens on."""
    ip = _ip_of(driver_host)
    if ip in hosts or "0.0.0.0" in hosts or "::" in hosts:
        return driver_host
    host = hosts[0]
    return f"[{host}]" if ":" in host else host


class ClusterStatus(dict):
    """The status as a dict (nodes, phases, training, input, totals; as the endpoint's
    /api/status serves it) that prints as the table `sparktf status URL` prints."""

    def table(self) -> str:
        import json

        return _native.format_status_table(json.dumps(self))

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython and Jupyter
        printer.text(self.table())

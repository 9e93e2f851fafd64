"""A small Nautobot REST client: paged reads and bulk writes (lists on POST/PATCH/DELETE).

The token is read from a file that only its owner may read; it lives in the HTTP client's
headers and nowhere else (never printed, logged, or written to an artifact)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from topology.errors import SpecError, plain

CHUNK = 250  # objects per bulk request: big enough to be quick, small enough for one transaction
# Writes ask Nautobot to leave many-to-many fields (tags, content types, an interface's addresses)
# out of the answer: they are still written, but not read back and rendered per object, and the
# publisher uses only each created object's id.
LEAN_ANSWER = {"exclude_m2m": "true"}


class NautobotError(RuntimeError):
    pass


MAX_TOKEN_BYTES = 1024  # Nautobot's tokens are 40 hex characters; room for other schemes, not for a file's worth
TOKEN_CHARS = re.compile(r"[!-~]+")  # visible ASCII: what an HTTP header value may carry without escaping
MAX_ERROR_CHARS = 500  # of a server's answer, in an error line


def read_token(path: Path) -> str:
    """The token from `path`, refusing a file that group or others may read (like ssh does).
    No error ever quotes the file's content: a mistake in it may still be most of the secret."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise SpecError("--token-file", f"cannot read {path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise SpecError("--token-file", f"{path} is not a file")
    if st.st_mode & 0o077:
        raise SpecError("--token-file", f"{path} must not be readable by group or others "
                                        f"(mode {stat.S_IMODE(st.st_mode):04o}; chmod 600)")
    if st.st_size > MAX_TOKEN_BYTES:
        raise SpecError("--token-file", f"{path} is {st.st_size} bytes: a token file holds one token "
                                        f"(at most {MAX_TOKEN_BYTES} bytes)")
    raw = Path(path).read_bytes().strip()
    if not raw or b"\n" in raw or not TOKEN_CHARS.fullmatch(raw.decode("latin-1")):
        raise SpecError("--token-file", f"{path} must hold one token on one line, of visible ASCII characters "
                                        "(no spaces, control characters or other bytes)")
    return raw.decode("ascii")


class Nautobot:
    def __init__(self, url: str, token: str, timeout: float = 300.0, page: int = 1000, chunk: int = CHUNK,
                 workers: int = 1):
        if not url.startswith(("http://", "https://")):
            raise SpecError("--nautobot", "must be an http:// or https:// URL")
        self.url = url.rstrip("/")
        self.page = page
        self.chunk = chunk
        self.workers = max(1, workers)  # concurrent bulk requests for objects that do not depend on each other
        self.requests = 0
        self._token = token
        self._http = httpx.Client(
            base_url=self.url + "/api/",
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=timeout,
        )

    def __repr__(self) -> str:  # never shows the token
        return f"Nautobot({self.url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Nautobot:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _safe(self, text: str) -> str:
        """Server text fit for an error line: the token cut out (a proxy's error page may echo the
        request's headers), control characters escaped, the length bounded."""
        return plain(text.replace(self._token, "<token>")[:MAX_ERROR_CHARS])

    def _call(self, method: str, endpoint: str, **kw) -> httpx.Response:
        self.requests += 1
        try:
            r = self._http.request(method, endpoint, **kw)
        except httpx.HTTPError as e:
            raise NautobotError(f"{method} {endpoint}: {self._safe(str(e))}") from None
        if r.status_code >= 400:
            raise NautobotError(f"{method} {endpoint}: HTTP {r.status_code}: {self._safe(r.text)}")
        return r

    def _json(self, method: str, endpoint: str, shape: type, **kw):
        """The answer's JSON, of the shape the API documents (a mapping or a list), or a NautobotError."""
        r = self._call(method, endpoint, **kw)
        try:
            body = r.json()
        except (ValueError, RecursionError):  # not JSON, or 4,300-digit integers
            raise NautobotError(f"{method} {endpoint}: the answer is not JSON "
                                f"({self._safe(r.headers.get('content-type', 'no content type'))}): "
                                "is the URL Nautobot's, and not a login page or proxy?") from None
        if not isinstance(body, shape):
            raise NautobotError(f"{method} {endpoint}: the answer is not a JSON {shape.__name__} as Nautobot's API "
                                "gives")
        return body

    def version(self) -> str:
        return self._safe(str(self._json("GET", "status/", dict).get("nautobot-version", "")))

    def count(self, endpoint: str, **params) -> int:
        """How many objects match, with one object on the wire."""
        return _count(endpoint, self._json("GET", endpoint, dict, params={**params, "limit": 1,
                                                                           "exclude_m2m": "true"}))

    def list(self, endpoint: str, **params) -> list[dict]:
        """All objects, each exactly once. Offset paging is sound only over a unique, stable order,
        and Nautobot's default orders are neither (IP-address-to-interface has none; PostgreSQL may
        then order each LIMIT/OFFSET query differently, so pages overlap and objects go unseen, and
        an unseen object would be posted again). So reads sort by primary key (`sort=id`), pages
        are de-duplicated by id, and a read with fewer distinct objects than the server counted
        fails instead of passing for "not there". The first page gives the count; the others are
        fetched concurrently (up to `workers` at a time) when there are several."""
        params = {"sort": "id", **params}
        get = lambda offset: _page(endpoint, self._json(  # noqa: E731
            "GET", endpoint, dict, params={**params, "limit": self.page, "offset": offset}))
        first = get(0)
        count = _count(endpoint, first) if first.get("count") is not None else None
        pages = [first]
        if first.get("next") and (count is None or self.workers == 1):  # follow the pages one by one
            offset, body = 0, first
            # bounded: as many pages as the count needs (a server that always says `next` stops there)
            most = -(-count // self.page) if count is not None else MAX_PAGES
            while body.get("next"):
                if len(pages) >= most:
                    raise NautobotError(f"GET {endpoint}: the server still offers a next page after {len(pages)} "
                                        f"pages of {self.page} (it counted {count}): stopped")
                offset += self.page
                body = get(offset)
                pages.append(body)
        elif first.get("next"):
            with ThreadPoolExecutor(self.workers) as pool:
                pages += pool.map(get, range(self.page, count, self.page))
        return _distinct(endpoint, pages, count)

    def _chunks(self, items: list, size: int | None = None) -> Iterable[list]:
        size = size or self.chunk
        for i in range(0, len(items), size):
            yield items[i:i + size]

    def _parts(self, items: list, parallel: bool) -> list[list]:
        """Bulk request bodies: `chunk` objects each; a concurrent type smaller than workers x chunk is
        split evenly so that every worker gets a part."""
        size = -(-len(items) // self.workers) if parallel and self.workers > 1 else self.chunk
        return list(self._chunks(items, max(1, min(self.chunk, size))))

    def _each(self, send, parts: list[list], parallel: bool) -> list:
        """`send` of every part, in order; up to `workers` at a time when the objects are independent."""
        if parallel and self.workers > 1 and len(parts) > 1:
            with ThreadPoolExecutor(self.workers) as pool:
                return list(pool.map(send, parts))
        return [send(part) for part in parts]

    def create(self, endpoint: str, objects: list[dict], parallel: bool = False) -> list[dict]:
        """Created objects in the order given (chunks may go concurrently when `parallel`)."""
        post = lambda part: self._json("POST", endpoint, list, json=part, params=LEAN_ANSWER)  # noqa: E731
        return [obj for made in self._each(post, self._parts(objects, parallel), parallel) for obj in made]

    def update(self, endpoint: str, objects: list[dict], parallel: bool = False) -> list[dict]:
        patch = lambda part: self._json("PATCH", endpoint, list, json=part, params=LEAN_ANSWER)  # noqa: E731
        return [obj for done in self._each(patch, self._parts(objects, parallel), parallel) for obj in done]

    def delete(self, endpoint: str, ids: list[str], parallel: bool = False) -> None:
        remove = lambda part: self._call("DELETE", endpoint, json=[{"id": i} for i in part])  # noqa: E731
        self._each(remove, self._parts(ids, parallel), parallel)


MAX_PAGES = 1000  # a read with no count: a million objects at the default page size, then a stop


def _count(endpoint: str, body: dict) -> int:
    count = body.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count < 10**9:
        raise NautobotError(f"GET {endpoint}: the answer's count is not a count of objects")
    return count


def _page(endpoint: str, body: dict) -> dict:
    results = body.get("results")
    if not isinstance(results, list) or not all(isinstance(o, dict) and isinstance(o.get("id"), str)
                                                for o in results):
        raise NautobotError(f"GET {endpoint}: the answer's results are not a list of objects with ids")
    return body


def _distinct(endpoint: str, pages: list[dict], count: int | None) -> list[dict]:
    """The pages' objects once each (by id, in page order), as many as the server counted."""
    seen: dict[str, dict] = {}
    for body in pages:
        for obj in body["results"]:
            seen.setdefault(obj["id"], obj)
    if count is not None and len(seen) != count:
        raise NautobotError(f"GET {endpoint}: read {len(seen)} distinct objects of the {count} the server counted "
                            "(its paging skipped or repeated some, or objects changed during the read); "
                            "nothing is compared against an incomplete read: run again")
    return list(seen.values())

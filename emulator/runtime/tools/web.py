"""``browser_fetch`` (an HTTP GET returning text) and ``web_search`` (Tencent Cloud WSA).

On the platform ``browser_fetch`` loads the page in the sandbox's Chromium;
here it is a plain GET (no JavaScript runs), bounded in size and time.
``web_search`` calls Tencent Cloud's Web Search API directly with
``WSA_API_KEY``, as the platform's toolkit does (its docs: "does NOT use the
sandbox", product 1806). The request follows Tencent Cloud's public
``SearchPro`` API; it has not been run against the live service here.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from makers_store.errors import missing_extra

from ..errors import ToolArgumentError, ToolError

#: browser_fetch keeps at most this many bytes of a body.
MAX_FETCH_BYTES = 2 * 1024 * 1024
#: Seconds one browser_fetch may take in all (connect, redirects, body).
FETCH_TIMEOUT_S = 20.0
MAX_REDIRECTS = 5
USER_AGENT = "makers-store-serve (browser_fetch)"

#: Tencent Cloud Web Search API, the SearchPro action (Bearer API key).
WSA_SEARCH_URL = "https://api.wsa.cloud.tencent.com/SearchPro"
WSA_TIMEOUT_S = 30.0
DEFAULT_MAX_RESULTS = 5

_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/xhtml")


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise missing_extra("httpx", "serve") from None
    return httpx


@dataclass(frozen=True)
class FetchResult:
    url: str
    status: int
    content_type: str
    content: str
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        """The tool result (JSON keys in the platform's camelCase)."""
        out = asdict(self)
        out["contentType"] = out.pop("content_type")
        return out


def _is_text(content_type: str) -> bool:
    kind = content_type.split(";", 1)[0].strip().lower()
    return (
        not kind
        or kind.startswith("text/")
        or kind.startswith(_TEXT_TYPES)
        or kind.endswith(("+json", "+xml"))
    )


def _checked_url(url: Any) -> str:
    if not isinstance(url, str) or not url:
        raise ToolArgumentError(f"url must be a non-empty string, not {url!r}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolArgumentError(f"url must be an absolute http:// or https:// URL, not {url!r}")
    return url


async def _get(url: str) -> FetchResult:
    httpx = _httpx()
    limits = {"follow_redirects": True, "max_redirects": MAX_REDIRECTS, "timeout": FETCH_TIMEOUT_S}
    async with (
        httpx.AsyncClient(headers={"user-agent": USER_AGENT}, **limits) as client,
        client.stream("GET", url) as response,
    ):
        content_type = response.headers.get("content-type", "")
        if not _is_text(content_type):
            raise ToolError(
                f"{url} answered {content_type!r}, which is not text; browser_fetch returns "
                "text only (download binaries with commands, e.g. curl -o)"
            )
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_FETCH_BYTES:
                break
        text = bytes(body[:MAX_FETCH_BYTES]).decode(response.encoding or "utf-8", "replace")
        return FetchResult(
            str(response.url), response.status_code, content_type, text,
            len(body) > MAX_FETCH_BYTES,
        )  # fmt: skip


async def fetch_text(url: Any) -> FetchResult:
    """GET ``url`` and return its body as text (at most MAX_FETCH_BYTES)."""
    checked = _checked_url(url)
    httpx = _httpx()
    try:
        return await asyncio.wait_for(_get(checked), FETCH_TIMEOUT_S)
    except TimeoutError:
        raise ToolError(f"GET {checked} took longer than {FETCH_TIMEOUT_S:g} s") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"GET {checked} failed: {type(exc).__name__}: {exc}") from None


# -- web_search ---------------------------------------------------------------


def _search_arguments(query: Any, max_results: Any, site: Any) -> tuple[str, int, str | None]:
    if not isinstance(query, str) or not query.strip():
        raise ToolArgumentError(f"query must be a non-empty string, not {query!r}")
    if max_results is None:
        max_results = DEFAULT_MAX_RESULTS
    if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
        raise ToolArgumentError(f"maxResults must be a positive integer, not {max_results!r}")
    if site is not None and (not isinstance(site, str) or not site.strip()):
        raise ToolArgumentError(f"site must be a domain such as 'zhihu.com', not {site!r}")
    return query.strip(), max_results, site.strip() if site else None


def _page(item: Any) -> dict[str, str] | None:
    if isinstance(item, str):  # the API sends each page as a JSON string
        try:
            item = json.loads(item)
        except ValueError:
            return None
    if not isinstance(item, dict):
        return None

    def text(*keys: str) -> str:
        for key in keys:
            if isinstance(item.get(key), str) and item[key]:
                return str(item[key])
        return ""

    return {
        "title": text("title"),
        "href": text("url", "href"),
        "snippet": text("passage", "content", "snippet"),
        "site": text("site"),
        "date": text("date"),
    }


def _results(status: int, data: Any, max_results: int) -> list[dict[str, str]]:
    response = data.get("Response") if isinstance(data, dict) else None
    if not isinstance(response, dict):
        raise ToolError(f"the WSA API answered HTTP {status} without a Response object")
    error = response.get("Error")
    if isinstance(error, dict):
        code, message = error.get("Code"), error.get("Message")
        raise ToolError(f"the WSA API refused the search: {code}: {message}")
    if status >= 400:
        raise ToolError(f"the WSA API answered HTTP {status}")
    pages = [_page(item) for item in response.get("Pages") or []]
    return [page for page in pages if page is not None][:max_results]


async def web_search(
    query: Any,
    max_results: Any = None,
    site: Any = None,
    *,
    api_key: str | None,
    endpoint: str = WSA_SEARCH_URL,
) -> list[dict[str, str]]:
    """Search with WSA; a list of ``{title, href, snippet, site, date}``."""
    text, limit, domain = _search_arguments(query, max_results, site)
    if not api_key:
        raise ToolError(
            "401 Unauthorized: WSA_API_KEY is not set. web_search calls Tencent Cloud's Web "
            "Search API with it, as on the platform; put WSA_API_KEY in .env or the environment"
        )
    httpx = _httpx()
    payload: dict[str, Any] = {"Query": text}
    if domain:
        payload["Site"] = domain
    headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
    try:
        async with httpx.AsyncClient(timeout=WSA_TIMEOUT_S) as client:
            response = await client.post(endpoint, json=payload, headers=headers)
    except httpx.HTTPError as exc:
        raise ToolError(f"the WSA API could not be reached: {type(exc).__name__}: {exc}") from None
    if response.status_code in (401, 403):
        raise ToolError(f"{response.status_code} from the WSA API: check WSA_API_KEY")
    try:
        data = response.json()
    except ValueError:
        raise ToolError(f"the WSA API answered HTTP {response.status_code}, not JSON") from None
    return _results(response.status_code, data, limit)

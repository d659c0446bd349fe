"""The title and header fields of a page written in a common markup, when it has no YAML front matter.

AsciiDoc: a ``= Title`` line, then ``:name: value`` attribute lines (``:revdate: 2025-03-01``) up to
the first blank line. reStructuredText and Markdown's setext form: a title line underlined (and
perhaps overlined) with a run of one punctuation character, then reST's ``:Field: value`` docinfo
lines. A field list may open the page above its title instead (Sphinx's file-wide metadata,
AsciiDoc attributes before the document title). A wiki heading (``====== Title ======``), then
perhaps a wiki data block of ``key : value`` lines between ``---- name ----`` and ``----``.
Markdown ATX (``# Title``) and HTML (``<title>``, ``<h1>``) give a title only. A plain-text page
(a document exported as text, an email) may open with a title line and ``Key: value`` lines
(``Last updated: 1 December 2026``) up to its first blank line. MediaWiki's ``{{DISPLAYTITLE:...}}``
names a wiki page. Org mode: ``#+TITLE:``, ``#+LAST_MODIFIED:``, ... keyword lines. An XML topic (DITA) states its revision dates, author and keywords in its
prolog (``<revised modified="2026-01-15"/>``), an HTML page in ``<meta name=... content=...>``.
"""

from __future__ import annotations

import html
import re

_ADOC_TITLE = re.compile(r"^=\s+(?P<title>\S.*?)\s*$")
_FIELD = re.compile(r"^:(?P<name>[A-Za-z][\w .-]*?):(?:\s+(?P<value>.*?))?\s*$")
_UNDERLINE = re.compile(r"^([=\-~^*#+`:.'\"_])\1{2,}\s*$")
_ATX = re.compile(r"^#\s+(?P<title>\S.*?)\s*#*\s*$")
# A wiki heading closed by the run that opens it (DokuWiki's ``====== Title ======``, MediaWiki's
# ``= Title =``): the first one at the top of a page is its title.
_WIKI_HEADING = re.compile(r"^(?P<run>={1,6})[ \t]*(?P<title>[^=\s](?:.*?[^=\s])?)[ \t]*(?P=run)[ \t]*$")
# A wiki data block of ``key : value`` lines (DokuWiki's data plugin): ``---- dataentry NAME ----``
# up to a closing ``----``.
_DATA_OPEN = re.compile(r"^-{4,}\s*[A-Za-z][\w-]*(?:\s+[\w-]+)*\s*-{4,}\s*$")
_DATA_CLOSE = re.compile(r"^-{4,}\s*$")
_DATA_FIELD = re.compile(r"^(?P<name>[A-Za-z][\w .-]*?)\s*:\s*(?P<value>.*?)\s*$")
_TAG = re.compile(r"<[^>]+>")
# A plain header line: a short capitalised key ("Last updated", "Owner") and its value
_ORG_KEYWORD = re.compile(r"^#\+(?P<name>[A-Za-z][\w-]*):[ \t]*(?P<value>.*?)\s*$")
_PLAIN_FIELD = re.compile(r"^(?P<name>[A-Z][A-Za-z]*(?: [A-Za-z]+){0,3}):[ \t]+(?P<value>\S.*?)\s*$")
_SENTENCE_END = re.compile(r"[.:;,]$")  # a title may be a question
_DISPLAYTITLE = re.compile(r"\{\{\s*DISPLAYTITLE\s*:\s*(?P<title>[^}|]+?)\s*(?:\|[^}]*)?\}\}")
MEDIAWIKI_SUFFIXES = frozenset({".wiki", ".mediawiki", ".wikitext"})
_HTML_TITLE = re.compile(r"<(?:title|h1)\b[^>]*>(?P<title>.*?)</(?:title|h1)>", re.IGNORECASE | re.DOTALL)


def markup_header(text: str) -> tuple[str | None, dict[str, str]]:
    """``(title, fields)`` the header at the top of a page states (AsciiDoc, reST, setext
    Markdown), with the fields of a field list above the title; ``(None, {})`` when it opens
    otherwise."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines):
        return None, {}
    title: str | None = None
    if _ORG_KEYWORD.match(lines[i]):
        return _org_header(lines, i)
    # A field list that opens the page, above its title: Sphinx's file-wide metadata, AsciiDoc
    # attribute entries written before the document title.
    lead: dict[str, str] = {}
    while i < len(lines) and (f := _FIELD.match(lines[i])):
        lead[f.group("name").strip()] = (f.group("value") or "").strip()
        i += 1
    if lead:
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i == len(lines):
            return None, lead
    w = _WIKI_HEADING.match(lines[i])
    m = _ADOC_TITLE.match(lines[i]) if w is None else None
    if w:
        title, i = w.group("title"), i + 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        return title, {**lead, **_data_block(lines, i)}
    if m:
        title, i = m.group("title"), i + 1
        # the author and revision lines an AsciiDoc header may carry before its attributes
        while i < len(lines) and lines[i].strip() and not _FIELD.match(lines[i]):
            i += 1
    else:
        at = i + 1 if _UNDERLINE.match(lines[i]) else i  # reST may overline the title too
        if (
            at + 1 < len(lines)
            and lines[at].strip()
            and _UNDERLINE.match(lines[at + 1])
            and len(lines[at + 1].strip()) >= len(lines[at].strip())
        ):
            title, i = lines[at].strip(), at + 2
            while i < len(lines) and not lines[i].strip():
                i += 1  # reST's docinfo fields follow the title after a blank line
    if title is None and not lead:
        return _plain_header(lines, i)
    fields: dict[str, str] = dict(lead)
    while title is not None and i < len(lines) and lines[i].strip():
        f = _FIELD.match(lines[i])
        if not f:
            break
        fields[f.group("name").strip()] = (f.group("value") or "").strip()
        i += 1
    return title, fields


def _org_header(lines: list[str], i: int) -> tuple[str | None, dict[str, str]]:
    """An Org-mode page's ``#+KEYWORD: value`` lines (up to the first line that is none, blank
    lines aside), keys lower-cased; its ``#+TITLE`` is the title."""
    fields: dict[str, str] = {}
    while i < len(lines):
        m = _ORG_KEYWORD.match(lines[i])
        if m is None and lines[i].strip():
            break
        if m is not None:
            fields[m.group("name").lower().replace("_", " ")] = m.group("value")
        i += 1
    title = fields.pop("title", None) or None
    return title, fields


def _plain_header(lines: list[str], i: int) -> tuple[str | None, dict[str, str]]:
    """A title line followed at once by ``Key: value`` lines up to a blank line (a plain-text
    document's header); ``(None, {})`` when the page does not open so. The title line is short
    and is no sentence, and every line of the block must be a field, so prose is never read as
    a header."""
    title = lines[i].strip()
    if len(title) > 80 or _SENTENCE_END.search(title) or _PLAIN_FIELD.match(title):
        return None, {}
    fields: dict[str, str] = {}
    j = i + 1
    while j < len(lines) and lines[j].strip():
        f = _PLAIN_FIELD.match(lines[j])
        if f is None:
            return None, {}
        fields[f.group("name")] = f.group("value")
        j += 1
    return (title, fields) if fields else (None, {})


_REVISED = re.compile(r"<revised\b[^>]*\bmodified\s*=\s*[\"'](?P<date>[^\"']+)[\"']", re.IGNORECASE)
_AUTHOR = re.compile(r"<author\b[^>]*>(?P<author>[^<]+)</author>", re.IGNORECASE)
_KEYWORD = re.compile(r"<keyword\b[^>]*>(?P<keyword>[^<]+)</keyword>", re.IGNORECASE)
_META_TAG = re.compile(r"<meta\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(
    r"\b(?P<key>name|property|content)\s*=\s*(?P<q>[\"'])(?P<value>.*?)(?P=q)", re.IGNORECASE | re.DOTALL
)


def markup_fields(text: str) -> dict[str, str | list[str]]:
    """The metadata an XML or HTML page states in its markup: a DITA prolog's latest
    ``<revised modified=...>`` (as ``modified``), its ``<author>`` and ``<keyword>``s, and every
    ``<meta name=... content=...>`` of an HTML head (its ``name`` as the key). ``{}`` for a page
    with none, or one that is not markup."""
    if "<" not in text:
        return {}
    head = text[:20000]
    fields: dict[str, str | list[str]] = {}
    for tag in _META_TAG.findall(head):
        attrs = {m.group("key").lower(): html.unescape(m.group("value")).strip() for m in _ATTR.finditer(tag)}
        key = attrs.get("name") or attrs.get("property")
        if key and attrs.get("content"):
            fields[key] = attrs["content"]
    revised = sorted(m.group("date").strip() for m in _REVISED.finditer(head))
    if revised:
        fields["modified"] = revised[-1]
    author = _AUTHOR.search(head)
    if author and author.group("author").strip():
        fields["author"] = html.unescape(author.group("author").strip())
    keywords = [html.unescape(m.group("keyword").strip()) for m in _KEYWORD.finditer(head)]
    if keywords:
        fields["keywords"] = keywords
    return fields


def display_title(text: str) -> str | None:
    """The title MediaWiki's ``{{DISPLAYTITLE:...}}`` gives a page, markup stripped; None without one."""
    m = _DISPLAYTITLE.search(text[:4000])
    if m is None:
        return None
    title = _TAG.sub("", m.group("title")).replace("'''", "").replace("''", "")
    return " ".join(title.split()) or None


def _data_block(lines: list[str], i: int) -> dict[str, str]:
    """The ``key : value`` fields of a wiki data block that opens at line ``i`` (``{}`` if none)."""
    if i >= len(lines) or not _DATA_OPEN.match(lines[i]):
        return {}
    fields: dict[str, str] = {}
    for line in lines[i + 1 :]:
        if _DATA_CLOSE.match(line):
            return fields
        f = _DATA_FIELD.match(line)
        if f is None:
            return {}
        fields[f.group("name").strip()] = f.group("value")
    return {}


def first_title(text: str) -> str | None:
    """The first top-level heading of a page: ``# Title``, a ``= Title`` line, or HTML's title."""
    for line in text.splitlines():
        m = _ATX.match(line) or _ADOC_TITLE.match(line) or _WIKI_HEADING.match(line)
        if m:
            return m.group("title")
    m = _HTML_TITLE.search(text)
    if m:
        inner = _TAG.sub("", m.group("title"))
        return html.unescape(" ".join(inner.split())) or None
    return None


_BLOCK_END = re.compile(
    r"</(?:p|div|li|h[1-6]|tr|blockquote|pre|section|article|dd|dt)\s*>|<br\s*/?>", re.IGNORECASE
)
_LIST_ITEM = re.compile(r"<li\b[^>]*>", re.IGNORECASE)


def html_text(text: str) -> str:
    """The text an HTML fragment shows: one line per block (paragraph, list item, heading, line
    break), list items marked ``- ``, tags dropped, entities decoded. Text without tags is
    returned as it is."""
    if not _TAG.search(text):
        return text
    out = _LIST_ITEM.sub("\n- ", _BLOCK_END.sub("\n", text))
    out = html.unescape(_TAG.sub("", out))
    lines = (" ".join(line.split()) for line in out.splitlines())
    return "\n".join(line for line in lines if line)

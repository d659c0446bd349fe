"""A declared layout reads every text file it declares, whatever the format's suffix (TOML
procedures, Protocol Buffers tool definitions), skips binary ones with a warning, writes only text
formats, and a line of dashes that opens a wiki data block is not YAML front matter.

The workspace is written for these tests: a hill-top public observatory's front desk (telescope
loans, dome tours), a setting no domain or kit of the benchmark uses."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from causal_middleware.context.workspace import Workspace, check_context_target, split_front_matter

PROMPT = "Front desk assistant of the Greyfell Observatory.\nRules:\n- Answer from the visitor pages.\n"
LOANS_TOML = (
    '[metadata]\ntitle = "Telescope loans"\nowner = "front desk"\n\n'
    '[[steps]]\ntext = "Members may borrow a travel telescope for up to 14 days."\n'
)
PROTO = (
    'syntax = "proto3";\n\n// Books a dome tour. The visitor is named by `visitor_ref`.\n'
    "service BookTour {\n  rpc BookTour(BookTourRequest) returns (BookTourReply);\n}\n"
    "message BookTourRequest {\n  // the visitor's reference, e.g. GV-2231\n  string visitor_ref = 1;\n}\n"
)


def _layout(tmp_path: Path, config: str) -> None:
    (tmp_path / "desk" / "procedures").mkdir(parents=True)
    (tmp_path / "desk" / "api").mkdir()
    (tmp_path / "pages").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "pages" / "tours.md").write_text("# Dome tours\n\nDome tours last 40 minutes.\n")
    (tmp_path / "desk" / "procedures" / "loans.toml").write_bytes(LOANS_TOML.replace("\n", "\r\n").encode())
    (tmp_path / "desk" / "api" / "book_tour.proto").write_text(PROTO)
    (tmp_path / "causal-context.yaml").write_text(config)


def test_declared_text_files_are_read_whatever_their_suffix(tmp_path: Path) -> None:
    _layout(
        tmp_path,
        "prompt: prompt.txt\nkb: pages/*.md\nskills: desk/procedures/*.toml\ntools: desk/api/\n",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every glob yields a file it reads: no warning
        ws = Workspace.from_dir(tmp_path)
    assert ws.read("desk/procedures/loans.toml") == LOANS_TOML  # newlines as read_text gives them
    assert ws.component_type("desk/procedures/loans.toml") == "skill"
    assert ws.tool_prompt_path("book_tour") == "desk/api/book_tour.proto"
    assert "visitor_ref" in ws.read(ws.tool_prompt_path("book_tour") or "")
    # a change to a declared file of any text format can be written back; a binary format cannot
    assert check_context_target("desk/procedures/loans.toml", ws.layout) == "desk/procedures/loans.toml"
    with pytest.raises(ValueError, match="binary format"):
        check_context_target("desk/api/map.pdf", ws.layout)


def test_binary_files_a_glob_matches_are_skipped_with_a_warning(tmp_path: Path) -> None:
    _layout(tmp_path, "prompt: prompt.txt\nkb: pages/*.md\nskills: [desk/procedures/*.toml, desk/scans/*]\n")
    (tmp_path / "desk" / "scans").mkdir()
    (tmp_path / "desk" / "scans" / "rota.pdf").write_bytes(b"%PDF-1.4\n")
    (tmp_path / "desk" / "scans" / "badge.dat").write_bytes(b"\x00\x01\xffGV")
    with pytest.warns(UserWarning) as caught:
        ws = Workspace.from_dir(tmp_path)
    assert any("'desk/scans/*' matches 2 file(s) but none it reads" in str(w.message) for w in caught)
    assert not ws.exists("desk/scans/rota.pdf") and not ws.exists("desk/scans/badge.dat")
    assert ws.exists("desk/procedures/loans.toml")


def test_a_bare_workspace_still_reads_only_markup_suffixes(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "system_prompt.md").write_text(PROMPT)
    (tmp_path / "kb" / "tours.md").write_text("# Dome tours\n\nDome tours last 40 minutes.\n")
    (tmp_path / "kb" / "notes.toml").write_text('title = "not read"\n')
    ws = Workspace.from_dir(tmp_path)
    assert ws.exists("kb/tours.md") and not ws.exists("kb/notes.toml")


@pytest.mark.parametrize(
    "text",
    [
        "---- dataentry loans ----\nreviewed_dt : 2026-03-02\n----\n\n====== Telescope loans ======\n",
        "-----\nA rule above the page.\n",
    ],
)
def test_a_line_of_more_than_three_dashes_is_not_front_matter(text: str) -> None:
    assert split_front_matter(text) == ({}, text)


def test_yaml_front_matter_is_still_read_and_an_unclosed_one_refused() -> None:
    assert split_front_matter("---\ntitle: Dome tours\n---\nBody\n") == ({"title": "Dome tours"}, "Body\n")
    with pytest.raises(ValueError, match="never closed"):
        split_front_matter("---\ntitle: Dome tours\nBody\n")


def test_one_tool_manifest_per_file_names_its_tool(tmp_path: Path) -> None:
    (tmp_path / "mcp").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    manifest = (
        '{"name": "book_tour", "title": "Book a dome tour", "description": "Books a tour for `visitor_ref`.",'
        ' "inputSchema": {"type": "object", "properties": {"visitor_ref": {"type": "string"}}}}'
    )
    (tmp_path / "mcp" / "book-tour.json").write_text(manifest)
    (tmp_path / "mcp" / "loan.json").write_text(
        '{"type": "function", "function": {"name": "lend_telescope", "parameters": {"type": "object"}}}'
    )
    (tmp_path / "mcp" / "catalogue.json").write_text(
        '{"name": "desk tools", "description": "all of them", "tools": [{"name": "cancel_tour"}, {"name": "find_visitor"}]}'
    )
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\ntools: mcp/\n")
    ws = Workspace.from_dir(tmp_path)
    assert ws.tool_names() == ["book_tour", "cancel_tour", "find_visitor", "lend_telescope"]
    assert ws.tool_prompt_path("book_tour") == "mcp/book-tour.json"
    assert ws.tool_prompt_path("find_visitor") == "mcp/catalogue.json"


def test_glob_character_classes_keep_their_ranges(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    for name in ("tours.md", "9-evenings.md", "_index.md", "Zones.md", "a-z.md"):
        (tmp_path / "pages" / name).write_text(f"# {name}\n\nText.\n")
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\nkb: pages/[a-z0-9]*.md\n")
    ws = Workspace.from_dir(tmp_path)
    assert sorted(e.path for e in ws.kb_entries()) == [
        "pages/9-evenings.md",
        "pages/a-z.md",
        "pages/tours.md",
    ]
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\nkb: pages/[!_]*.md\n")
    ws = Workspace.from_dir(tmp_path)
    assert "pages/_index.md" not in {e.path for e in ws.kb_entries()} and len(ws.kb_entries()) == 4


def test_a_python_module_of_langchain_tools_names_each_tool(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "agent" / "tools.py").write_text(
        "from langchain_core.tools import tool\nimport langchain_core.tools as lct\n\n\n"
        "@tool\ndef book_tour(visitor_ref: str) -> str:\n"
        '    """Book a dome tour.\n\n    Args:\n        visitor_ref: the visitor\'s reference, e.g. GV-2231\n    """\n'
        '    return "booked"\n\n\n'
        '@tool("lend-telescope", return_direct=True)\nasync def lend(member_no: str) -> str:\n'
        '    """Lend a travel telescope for up to 14 days."""\n    return "lent"\n\n\n'
        "@lct.tool(args_schema=None)\ndef cancel_tour(visitor_ref: str) -> str:\n"
        '    """Cancel a tour."""\n    return "cancelled"\n\n\n'
        "def helper() -> None:\n    pass\n"
    )
    (tmp_path / "agent" / "single.py").write_text(
        '"""No decorator here."""\n\n\ndef run() -> None:\n    pass\n'
    )
    (tmp_path / "agent" / "broken.py").write_text("def (:\n")
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\ntools: agent/*.py\n")
    ws = Workspace.from_dir(tmp_path)
    assert ws.tool_names() == ["book_tour", "broken", "cancel_tour", "lend-telescope", "single"]
    assert {ws.tool_prompt_path(t) for t in ("book_tour", "lend-telescope", "cancel_tour")} == {
        "agent/tools.py"
    }
    assert ws.tool_prompt_path("single") == "agent/single.py"  # no @tool: the file names its tool


def test_an_openapi_document_describes_one_tool_per_operation(tmp_path: Path) -> None:
    (tmp_path / "api" / "paths").mkdir(parents=True)
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "api" / "desk.openapi.yaml").write_text(
        "openapi: 3.1.0\ninfo: {title: Desk API, version: '1'}\npaths:\n"
        "  /tours:\n    post:\n      operationId: book_tour\n      summary: Book a dome tour\n"
        "      parameters: [{name: visitor_ref, in: query}]\n"
        "    get:\n      operationId: list_tours\n  /loans/{id}:\n    delete: {operationId: end_loan}\n"
        "    parameters: [{name: id, in: path}]\ncomponents: {schemas: {}}\n"
    )
    (tmp_path / "api" / "paths" / "telescopes.yaml").write_text("put:\n  operationId: lend_telescope\n")
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\ntools: api/\n")
    ws = Workspace.from_dir(tmp_path)
    assert ws.tool_names() == ["book_tour", "end_loan", "lend_telescope", "list_tours"]
    assert ws.tool_prompt_path("end_loan") == "api/desk.openapi.yaml"
    assert ws.tool_prompt_path("lend_telescope") == "api/paths/telescopes.yaml"


def test_a_json_schema_per_file_is_one_tool_named_by_its_file(tmp_path: Path) -> None:
    # Pydantic's model_json_schema(): its keys are schema keywords, its title a class name
    (tmp_path / "schemas").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "schemas" / "book_tour.json").write_text(
        '{"description": "Book a dome tour.", "properties": {"visitor_ref": {"title": "Visitor Ref",'
        ' "type": "string"}}, "required": ["visitor_ref"], "title": "BookTour", "type": "object"}'
    )
    (tmp_path / "schemas" / "tour_limits.json").write_text('{"book_tour": "Book a dome tour."}')
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\ntools: schemas/\n")
    ws = Workspace.from_dir(tmp_path)
    assert ws.tool_names() == ["book_tour"]  # a {name: description} file still names its tools
    assert "visitor_ref" in ws.tool_prompt("book_tour")


def test_spring_ai_tool_annotations_name_their_tools(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "tools" / "BookTourTool.java").write_text(
        "import org.springframework.ai.tool.annotation.Tool;\n\n@Component\npublic class BookTourTool {\n"
        '    @Tool(name = "book_tour",\n          description = "Book a dome tour (40 minutes). "\n'
        '                  + "Call it after the visitor agreed a time.")\n'
        "    public TourReply bookTour(\n"
        '            @ToolParam(description = "the visitor\'s reference (GV-2231)") String visitorRef) {\n'
        "        return desk.book(visitorRef);\n    }\n\n"
        '    @Tool(description = "Cancel a tour.")\n    @Transactional\n'
        "    public List<String> cancelTour(String visitorRef) { return List.of(); }\n}\n"
    )
    (tmp_path / "tools" / "LendTool.kt").write_text(
        '@Tool(description = "Lend a travel telescope")\nfun lendTelescope(memberNo: String): String = "lent"\n'
    )
    (tmp_path / "tools" / "Helper.java").write_text("public class Helper { void run() {} }\n")
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\ntools: tools/\n")
    ws = Workspace.from_dir(tmp_path)
    assert ws.tool_names() == ["Helper", "book_tour", "cancelTour", "lendTelescope"]
    assert ws.tool_prompt_path("book_tour") == "tools/BookTourTool.java"


def test_mediawiki_pages_are_titled_by_their_name_or_displaytitle(tmp_path: Path) -> None:
    (tmp_path / "wiki" / "Visits").mkdir(parents=True)
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "wiki" / "Visits" / "Dome_tours.wiki").write_text(
        "== How long ==\n# Arrive ten minutes early.\nDome tours last 40 minutes.\n[[Category:Visits]]\n"
    )
    (tmp_path / "wiki" / "Visits" / "Loans.wiki").write_text(
        "{{DISPLAYTITLE:Telescope ''loans''}}\n== Price ==\nA loan costs 5 pounds a week.\n"
    )
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\nkb: wiki/**/*.wiki\n")
    ws = Workspace.from_dir(tmp_path)
    titles = {e.path: e.title for e in ws.kb_entries()}
    assert titles == {
        "wiki/Visits/Dome_tours.wiki": "Dome tours",
        "wiki/Visits/Loans.wiki": "Telescope loans",
    }


def test_a_plain_text_header_gives_title_and_change_date_and_a_bom_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "docs" / "tours.txt").write_bytes(
        "\ufeffDOME TOURS\nLast updated: 4 March 2026\nOwner: Front desk\n\n\nTours last 40 minutes.\n".encode()
    )
    (tmp_path / "docs" / "faq.txt").write_text(
        "CAN I BRING A CHILD?\nYes, children under 12 come free.\nPrice: 5 pounds\n"
    )
    (tmp_path / "docs" / "notes.txt").write_text("Tours last 40 minutes.\nUpdated: often\n")
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\nkb: docs/\n")
    ws = Workspace.from_dir(tmp_path)
    entries = {e.path: e for e in ws.kb_entries()}
    tours = entries["docs/tours.txt"]
    assert (tours.title, tours.modified, tours.owner) == ("DOME TOURS", "2026-03-04", "Front desk")
    assert not tours.text.startswith("\ufeff")
    faq = entries["docs/faq.txt"]  # a line of prose under the title: no header
    assert (faq.title, faq.modified, faq.owner) == ("faq", None, None)
    assert entries["docs/notes.txt"].modified is None  # a sentence is no title line


def test_semantic_kernel_functions_name_their_tools(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "plugins" / "Tours.cs").write_text(
        "using Microsoft.SemanticKernel;\n\npublic sealed class DeskPlugin\n{\n"
        '    [KernelFunction("book_tour")]\n    [Description("Books a dome tour [40 minutes].")]\n'
        "    public async Task<string> BookTourAsync(\n"
        '        [Description("The visitor reference, e.g. GV-2231.")] string visitorRef)\n    { return ""; }\n\n'
        '    [KernelFunction, Description("Cancel a tour.")]\n'
        '    public async Task<string> CancelTourAsync(string visitorRef) { return ""; }\n}\n'
    )
    (tmp_path / "plugins" / "Models.cs").write_text("public record Tour(string Ref);\n")
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\ntools: plugins/\n")
    ws = Workspace.from_dir(tmp_path)
    assert ws.tool_names() == ["CancelTour", "Models", "book_tour"]
    assert ws.tool_prompt_path("book_tour") == "plugins/Tours.cs"


def test_a_dita_prolog_and_html_meta_tags_give_the_page_header(tmp_path: Path) -> None:
    (tmp_path / "topics").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "topics" / "tours.dita").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE concept PUBLIC "-//OASIS//DTD DITA Concept//EN" "concept.dtd">\n'
        '<concept id="tours"><title>Dome tours</title><prolog><author>Front desk</author>\n'
        '<critdates><created date="2023-01-02"/><revised modified="2025-05-01"/><revised modified="2026-02-03"/>'
        "</critdates><metadata><keywords><keyword>dome</keyword><keyword>tour</keyword></keywords></metadata>"
        "</prolog><conbody><p>Dome tours last 40 minutes.</p></conbody></concept>\n"
    )
    (tmp_path / "topics" / "loans.html").write_text(
        '<html><head><title>Telescope loans</title><meta name="dcterms.modified" content="2026-04-05">'
        '<meta name="author" content="Loans team"></head><body><p>Loans cost 5 pounds.</p></body></html>\n'
    )
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\nkb: topics/\n")
    ws = Workspace.from_dir(tmp_path)
    tours, loans = ws.kb_entry("topics/tours.dita"), ws.kb_entry("topics/loans.html")
    assert (tours.title, tours.modified, tours.author, tours.keywords) == (
        "Dome tours",
        "2026-02-03",
        "Front desk",
        ["dome", "tour"],
    )
    assert (loans.title, loans.modified, loans.author) == ("Telescope loans", "2026-04-05", "Loans team")


def test_org_mode_keyword_lines_give_title_change_date_and_author(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "prompt.txt").write_text(PROMPT)
    (tmp_path / "pages" / "tours.org").write_text(
        "#+TITLE: Dome tours\n#+AUTHOR: Front desk\n#+DATE: 2023-05-02\n#+LAST_MODIFIED: 2026-04-22\n\n"
        "* How long\nDome tours last 40 minutes.\n"
    )
    (tmp_path / "causal-context.yaml").write_text("prompt: prompt.txt\nkb: pages/\n")
    entry = Workspace.from_dir(tmp_path).kb_entry("pages/tours.org")
    assert (entry.title, entry.modified, entry.author) == ("Dome tours", "2026-04-22", "Front desk")

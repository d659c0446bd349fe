"""Round 15 of issue 19: pages whose fields are TOML front matter or a JSON article export, an
HTML body read as text, index words under any field name, an amount in a currency's minor unit,
a reply saying the answer was about something else read as no value, a tool error that points
at its list of allowed values, and a page titled after a sibling thing read as no rival claim.

Every input is written for these tests and set at a county beekeeping association (hive
inspections, swarm collection, the honey show), a setting no domain or kit of the benchmark uses.
"""

from __future__ import annotations

import json

from context_generalise.chat import Chat

from causal_middleware.context.dates import change_date
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.markup import html_text
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import _labels, _prose, _word_keys, recommend
from causal_middleware.context.root_cause import diagnose
from causal_middleware.context.text import find_values, same_value
from causal_middleware.context.tool_errors import allowed_values
from causal_middleware.context.workspace import Workspace, read_page

TOML_PAGE = """+++
title = "Swarm collection"
lastmod = 2026-05-02T08:00:00Z
tags = ["swarms", "callout"]
+++

A volunteer collects a swarm within 24 hours of your call.
"""

JSON_ARTICLE = json.dumps(
    {
        "id": 5501,
        "title": "Hive inspections",
        "updated_at": "2026-04-11T09:30:00Z",
        "label_names": ["inspection", "bee inspector"],
        "content_tag_ids": [],
        "body": "<p>An inspector visits each registered apiary once a year.</p><p>Book a visit by "
        "phone &amp; email.</p><ul><li>Spring</li><li>Summer</li></ul>",
    },
    indent=2,
)


def test_toml_front_matter_and_a_json_article_are_read_as_pages() -> None:
    meta, body = read_page(TOML_PAGE)
    assert meta["title"] == "Swarm collection" and meta["tags"] == ["swarms", "callout"]
    assert change_date(meta) == "2026-05-02"
    assert body.strip() == "A volunteer collects a swarm within 24 hours of your call."
    meta, body = read_page(JSON_ARTICLE)
    assert meta["title"] == "Hive inspections" and change_date(meta) == "2026-04-11"
    assert body.splitlines() == [
        "An inspector visits each registered apiary once a year.",
        "Book a visit by phone & email.",
        "- Spring",
        "- Summer",
    ]
    # the sentence stating a value is found in the article's text, not in its JSON
    assert _prose(JSON_ARTICLE).startswith("An inspector visits")
    # YAML front matter is read as before, and a file of none of these forms is its own body
    assert read_page("---\ntitle: Honey show\n---\nEntries close at noon.\n")[0] == {"title": "Honey show"}
    assert read_page("Plain notes.\n") == ({}, "Plain notes.\n")
    assert read_page('{"rows": [1, 2]}') == ({}, '{"rows": [1, 2]}')
    assert html_text("no tags here") == "no tags here"


def test_index_words_are_read_under_any_field_name() -> None:
    meta, _ = read_page(JSON_ARTICLE)
    assert _labels(meta) == ["inspection", "bee inspector"]
    assert _labels({"searchKeywords": "wax, comb", "tag_ids": [7, 9]}) == ["wax, comb"]
    # a word's forms compare as one: a silent final "e", a noun made with "-al" from its verb
    assert _word_keys({"charg"}) == _word_keys({"charge"})
    assert _word_keys({"removal"}) == _word_keys({"remov"})


def test_an_amount_in_a_minor_unit_is_money() -> None:
    assert find_values("A jar label costs 40p.") == [("money", "40p")]
    assert find_values("Stamps are 99c each, or 10 cents for a sticker.") == [
        ("money", "99c"),
        ("money", "10 cents"),
    ]
    assert same_value("40p", "£0.40") and not same_value("40p", "45p")
    # a rate stays a rate, and resolutions or codes are no amounts
    assert find_values("Copies cost 15p per page.") == [("measure", "15p per page")]
    assert all(kind != "money" for kind, _ in find_values("a 1080p camera in hive 4C"))


def test_a_reply_saying_the_answer_was_about_something_else_gives_no_value() -> None:
    kind, expected, _, _ = correction_delta(
        "That's about something else. The swarm callout fee is 40p a mile.",
        "The honey show entry fee is £2.00 per class.",
    )
    assert (kind, expected) == ("value", "40p")


def test_a_tool_error_pointing_at_its_list_gives_the_listed_values_only() -> None:
    error = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {
                "code": -32602,
                "message": "Invalid params: frame_type must be one of the allowed values",
                "data": {"received": "deep", "allowed": ["brood", "super"]},
            },
        }
    )
    assert allowed_values(error) == ["brood", "super"]


def test_a_page_titled_after_a_sibling_thing_is_no_rival_claim() -> None:
    ws = Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of the Vale Beekeepers\n\n- Answer from the member pages.\n",
            "kb/junior-membership.md": (
                "---\ntitle: Junior membership\nmodified: 2026-01-10\n---\n"
                "Junior membership costs £12 a year and includes the newsletter.\n"
            ),
            "kb/family-membership.md": (
                "---\ntitle: Family membership\nmodified: 2026-01-10\n---\n"
                "Family membership costs £15 a year for two adults and their children.\n"
            ),
            "kb/swarms.md": "---\ntitle: Swarm collection\n---\nWe collect swarms within 24 hours.\n",
        }
    )
    c = Chat(ws, "bees").user("What does junior membership cost?")
    c.search("junior membership cost")
    c.agent("Junior membership costs £12 a year and includes the newsletter.")
    c.user("It's £15 now, the £12 price is out of date.")
    conv = c.build()
    rec = recommend(conv, diagnose(conv, detect_offline(conv)), ws)
    # the family page states £15 for another thing: the junior page is stale, not in a tie
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/junior-membership.md"

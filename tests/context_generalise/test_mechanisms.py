"""Regression tests for the generalising mechanisms (issue 19, item 1): none names a domain.

Structured tool errors, measured values with units, corrections without cue words, and
component paths resolved by content.
"""

from __future__ import annotations

import json

import pytest

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.root_cause import FaultCategory, diagnose, resolve_path
from causal_middleware.context.signals import SignalType
from causal_middleware.context.statements import statement_kind
from causal_middleware.context.text import contains, find_values, magnitude, same_value
from causal_middleware.context.tool_errors import allowed_values, tool_error_delta
from causal_middleware.context.workspace import Workspace


def chat(*turns: tuple[str, str]) -> Conversation:
    nodes, turn = [], 0
    for role, text in turns:
        if role == "user":
            turn += 1
        kind = {"user": NodeType.USER, "agent": NodeType.AGENT, "system": NodeType.SYSTEM_PROMPT}[role]
        nodes.append(
            ConversationNode(
                id=f"n{len(nodes) + 1}",
                type=kind,
                turn=turn,
                content=text if kind != NodeType.SYSTEM_PROMPT else "",
                output=text if kind == NodeType.SYSTEM_PROMPT else "",
            )
        )
    return Conversation(session_id="s", nodes=nodes)


def corrections(conv: Conversation) -> list[int]:
    return [s.turn for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION]


# --- structured tool errors -------------------------------------------------------------------

JSON_ERROR = json.dumps(
    {"error": "invalid_request", "message": "status 'urgent' is not allowed; allowed: LOW, NORMAL, HIGH"}
)


def test_json_error_is_read_by_its_message_not_its_quotes() -> None:
    expected, got = tool_error_delta(JSON_ERROR, json.dumps({"status": "urgent"}))
    assert got == "urgent"
    assert expected is None  # three acceptable values, none resembles 'urgent': the description decides
    assert allowed_values(JSON_ERROR) == ["LOW", "NORMAL", "HIGH"]


def test_json_error_allowed_value_resembling_the_rejected_one() -> None:
    out = json.dumps({"message": "mode 'fast' is not allowed; allowed: SLOW, FASTEST, NORMAL"})
    assert tool_error_delta(out, json.dumps({"mode": "fast"})) == ("FASTEST", "fast")


def test_json_error_fields_and_lists() -> None:
    out = json.dumps({"detail": {"field": "tier", "got": "gold", "allowed_values": ["basic", "premium"]}})
    assert allowed_values(out) == ["basic", "premium"]
    assert tool_error_delta(out, json.dumps({"tier": "gold"}))[1] == "gold"
    single = json.dumps({"error": {"received": "v1", "expected": "v2"}})
    assert tool_error_delta(single) == ("v2", "v1")
    prefixed = 'Error 400: {"message": "colour \'teal\' is not supported; supported values: red, blue"}'
    assert tool_error_delta(prefixed, '{"colour": "teal"}')[1] == "teal"
    assert allowed_values(prefixed) == ["red", "blue"]


def test_plain_text_errors_still_work() -> None:
    out = "TypeError: send() got an unexpected keyword argument 'recipient' (parameters: 'to')"
    assert tool_error_delta(out, '{"recipient": "a"}') == ("to", "recipient")


def test_code_literals_match_their_case() -> None:
    assert not contains("`speedy` for damaged parcels", "DAMAGED")
    assert contains("use `DAMAGED` for damaged parcels", "DAMAGED")
    assert contains("The Fee is $25", "the fee")


# --- units ------------------------------------------------------------------------------------


def test_sizes_are_values_with_magnitudes() -> None:
    values = find_values("the file is 2 GB but the limit is 500 MB")
    assert values == [("size", "2 GB"), ("size", "500 MB")]
    assert magnitude("size", "2 GB")[1] > magnitude("size", "500 MB")[1]
    assert same_value("2GB", "2 GB") and same_value("2 GB", "2000 MB") and not same_value("2 GB", "500 MB")
    assert same_value("48 hours", "2 days") and not same_value("5 business days", "5 days")
    assert find_values("$50, as far as I know") == [("money", "$50")]


def test_size_contradiction_without_cue_words() -> None:
    conv = chat(
        ("user", "What is the upload limit?"),
        ("agent", "Uploads can be up to 500 MB."),
        ("user", "The portal says 2 GB."),
    )
    assert corrections(conv) == [2]
    kind, expected, got, _ = correction_delta("The portal says 2 GB.", "Uploads can be up to 500 MB.")
    assert (kind, expected, got) == ("value", "2 GB", "500 MB")


def test_bare_number_takes_the_answers_unit_unless_another_subject_is_named() -> None:
    assert correction_delta("no, it's 100. that changed", "The quota is 50 GB.")[1:3] == ("100 GB", "50 GB")
    kind, expected, got, _ = correction_delta(
        "wrong topic. the upload limit is 25", "the quota limit is 100 GB."
    )
    assert expected == "25"


# --- corrections without cue words ------------------------------------------------------------


def test_restated_answer_value_is_the_wrong_one() -> None:
    kind, expected, got, _ = correction_delta(
        "It used to be 7 days but it's 48 hours now.", "Claims must be filed within 7 days."
    )
    assert (kind, expected, got) == ("value", "48 hours", "7 days")


def test_assertion_contradicting_the_answer_is_a_correction() -> None:
    conv = chat(
        ("user", "How long until a parcel counts as missing?"),
        ("agent", "Parcels count as missing after 10 days."),
        ("user", "Your website says 7 days now."),
    )
    assert corrections(conv) == [2]


def test_assertion_of_another_kind_says_the_wrong_question_was_answered() -> None:
    conv = chat(
        ("user", "Do you charge anything if I send it back opened?"),
        ("agent", "Items can be sent back within 30 days."),
        ("user", "Not that. The handling fee is 15%."),
    )
    assert corrections(conv) == [2]
    assert correction_delta("Not that. The handling fee is 15%.", "Items can be sent back within 30 days.")[
        1:3
    ] == ("15%", "30 days")


@pytest.mark.parametrize(
    "text",
    ["Please move $200 to savings.", "I'd like to transfer $500 today.", "Can you send $40 to Sam?"],
)
def test_new_requests_with_values_are_not_contradictions(text: str) -> None:
    conv = chat(("user", "What is the fee?"), ("agent", "The fee is $25."), ("user", text))
    assert corrections(conv) == []


@pytest.mark.parametrize(
    ("text", "instruction"),
    [
        ("you can't promise that, it's on hold", "Do not promise that"),
        ("Shouldn't you send me a free label since it arrived cracked?", "Send the user a free label"),
        ("How can you guarantee that if it's out of stock?", "Do not guarantee that"),
        (
            "Whoa, you just printed my whole passport number. That's not okay.",
            "Do not print the user's whole",
        ),
    ],
)
def test_challenges_to_the_agent_are_behavioural_corrections(text: str, instruction: str) -> None:
    conv = chat(
        ("system", "# System prompt\n\nBe helpful."),
        ("user", "Can you help me with this?"),
        ("agent", "It will definitely be there on Friday."),
        ("user", text),
    )
    assert corrections(conv) == [2]
    kind, _, _, rule = correction_delta(text, "It will definitely be there on Friday.")
    assert kind == "behaviour" and rule.startswith(instruction)
    diag = diagnose(conv)
    assert diag.root_node_id == "n1" and diag.category == FaultCategory.SYSTEM_PROMPT_GAP


def test_weak_cue_in_the_users_own_situation_is_not_a_correction() -> None:
    conv = chat(
        ("user", "How long do I have to send something back?"),
        ("agent", "Items can be sent back within 30 days."),
        ("user", "I got the wrong colour, how do I send it back?"),
    )
    assert corrections(conv) == []
    assert statement_kind("I got the wrong colour") == "personal"
    assert statement_kind("Your site says 7 days") == "assertion"
    assert statement_kind("Transfer $5 please?") == "question"
    assert statement_kind("Please transfer $5") == "request"


# --- paths by content -------------------------------------------------------------------------

FILES = {
    "prompts/main-agent.txt": "You are the helper of Example Co.\nRules:\n- Be brief.\n",
    "docs/tools/returns-api.md": "---\nname: open_return\n---\n# open_return\n\nParameters:\n- `order_ref`: the order.\n- `why`: `broken` or `unwanted`.\n",
    "playbooks/returns.md": "# Returns\n\nUse open_return for returns.\n",
    "notes/faq-shipping.md": "---\ntitle: Shipping\n---\nParcels ship in 3 days.\n",
}


def test_path_resolved_by_content_not_by_naming_convention() -> None:
    ws = Workspace.from_files(FILES)
    system = ConversationNode(
        id="n1", type=NodeType.SYSTEM_PROMPT, turn=0, output=FILES["prompts/main-agent.txt"]
    )
    assert resolve_path(system, ws) == "prompts/main-agent.txt"
    tool = ConversationNode(
        id="n3",
        type=NodeType.TOOL_CALL,
        turn=1,
        name="open_return",
        content=json.dumps({"order_ref": "77", "why": "damaged"}),
        output=json.dumps({"message": "why 'damaged' is not allowed; allowed: broken, unwanted"}),
        status="error",
    )
    assert resolve_path(tool, ws) == "docs/tools/returns-api.md"
    kb = ConversationNode(id="n5", type=NodeType.KB_RETRIEVAL, turn=2, output="Parcels ship in 3 days.")
    assert resolve_path(kb, ws) == "notes/faq-shipping.md"
    unknown = ConversationNode(
        id="n6", type=NodeType.KB_RETRIEVAL, turn=2, output="Nothing like this anywhere."
    )
    assert resolve_path(unknown, ws) is None


def test_diagnose_uses_the_workspace_to_resolve_the_tool_path() -> None:
    ws = Workspace.from_files(FILES)
    tool_out = json.dumps({"message": "why 'damaged' is not allowed; allowed: broken, unwanted"})
    conv = Conversation(
        session_id="s",
        nodes=[
            ConversationNode(id="n1", type=NodeType.USER, turn=1, content="My cup arrived broken."),
            ConversationNode(
                id="n2",
                type=NodeType.TOOL_CALL,
                turn=1,
                name="open_return",
                content=json.dumps({"order_ref": "77", "why": "damaged"}),
                output=tool_out,
                status="error",
            ),
            ConversationNode(id="n3", type=NodeType.AGENT, turn=1, content="That did not work."),
        ],
    )
    without = diagnose(conv)
    assert without.component_path == "tools/open_return.md"  # the naming convention
    diag = diagnose(conv, workspace=ws)
    assert diag.root_node_id == "n2" and diag.component_path == "docs/tools/returns-api.md"
    assert diag.delta is not None and diag.delta.got == "damaged"

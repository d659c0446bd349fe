"""Lost property reports."""
from __future__ import annotations

from typing import Literal

from langchain_core.tools import tool
from pydantic import BaseModel, ConfigDict

from ..clients import lost_property_db


class LostItemReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    category: Literal["bag", "phone", "wallet", "clothing", "keys", "other"]
    description: str
    train_id: str | None = None


@tool(args_schema=LostItemReport)
def report_lost_item(category: str, description: str, train_id: str | None = None) -> str:
    """Log an item a customer has lost on a train or at a station.

    Args:
        category: The kind of item: "bag", "phone", "wallet", "clothing", "keys" or "other".
        description: Colour, brand and anything that identifies the item.
        train_id: The train the item was left on, if the customer knows it.
    """
    return lost_property_db.report(category, description, train_id)

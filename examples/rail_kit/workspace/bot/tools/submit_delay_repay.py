"""Delay Repay claim submission."""
from __future__ import annotations

from datetime import date
from typing import Literal

from langchain_core.tools import tool
from pydantic import BaseModel, ConfigDict

from ..clients import delay_repay_api


class DelayRepayClaim(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ticket_reference: str
    journey_date: date
    delay_minutes: int
    payout_method: Literal["bank_transfer", "paypal", "rail_voucher"]


@tool(args_schema=DelayRepayClaim)
def submit_delay_repay(ticket_reference: str, journey_date: date, delay_minutes: int,
                       payout_method: str) -> str:
    """Submit a Delay Repay claim for a delayed journey.

    Args:
        ticket_reference: The e-ticket reference or the number printed on the ticket.
        journey_date: Date of the delayed journey (YYYY-MM-DD).
        delay_minutes: Minutes late at the destination station.
        payout_method: How the customer wants to be paid: "bank_transfer", "paypal" or
            "rail_voucher".
    """
    return delay_repay_api.submit(ticket_reference, journey_date, delay_minutes, payout_method)

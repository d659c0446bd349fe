"""Cycle reservations on Coast Line trains."""
from __future__ import annotations

from langchain_core.tools import tool
from pydantic import BaseModel, ConfigDict

from ..clients import cycle_reservations


class ReserveBikeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    booking_reference: str
    train_id: str


@tool(args_schema=ReserveBikeInput)
def reserve_bike_space(booking_reference: str, train_id: str) -> str:
    """Reserve a bike space on a train for a customer who already has a ticket.

    Args:
        booking_reference: The eight-character booking reference of the customer's ticket.
        train_id: The train's headcode and departure time, e.g. "2C41 08:12".
    """
    return cycle_reservations.reserve(booking_reference, train_id)

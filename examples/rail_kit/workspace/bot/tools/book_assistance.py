"""Passenger Assist booking tool."""
from __future__ import annotations

from datetime import date, time
from typing import Literal

from langchain_core.tools import tool
from pydantic import BaseModel

from ..clients import assist_portal


class BookAssistanceInput(BaseModel):
    station_crs: str
    travel_date: date
    departure_time: time
    assistance_type: Literal["ramp", "wheelchair", "escort", "luggage"]


@tool(args_schema=BookAssistanceInput)
def book_assistance(station_crs: str, travel_date: date, departure_time: time,
                    assistance_type: str) -> str:
    """Book Passenger Assist for a customer's journey.

    Args:
        station_crs: Three-letter CRS code of the departure station, e.g. "NVC" for Northvale Central.
        travel_date: Date of travel (YYYY-MM-DD).
        departure_time: Departure time of the train (HH:MM, 24-hour).
        assistance_type: One of "ramp", "wheelchair", "escort" or "luggage".
    """
    return assist_portal.create_booking(station_crs, travel_date, departure_time, assistance_type)

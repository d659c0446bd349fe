"""Pydantic models for the support agent's tools.

`make schemas` writes one JSON Schema per model to agent/schemas/tools/<name>.json.
"""
from enum import Enum
from typing import Optional

from pydantic import BaseModel, Field


class EndRide(BaseModel):
    """End a rider's trip that is still open although the bike is in a dock."""
    trip_ref: str = Field(pattern=r"^T-[0-9]{8}-[0-9]{4}$")
    station_code: str = Field(pattern=r"^PE-[0-9]{3}$")
    note: Optional[str] = None


class RefundReason(str, Enum):
    dock_fault = "dock_fault"
    faulty_bike = "faulty_bike"
    cooling_off = "cooling_off"
    bike_recovered = "bike_recovered"
    goodwill = "goodwill"


class IssueRefund(BaseModel):
    """Refund part or all of a charge back to the card it was taken from."""
    trip_ref: str
    amount_pence: int = Field(gt=0)
    reason_code: RefundReason


class PassType(str, Enum):
    annual = "annual"
    annual_monthly_pay = "annual_monthly_pay"
    monthly = "monthly"
    day_pass = "day_pass"


class BuyPass(BaseModel):
    """Buy a pass for the rider on the card saved in their account."""
    account_id: str
    pass_type: PassType
    concession: bool = False


class FaultType(str, Enum):
    flat_tyre = "flat_tyre"
    brakes = "brakes"
    chain = "chain"
    saddle = "saddle"
    battery = "battery"
    lock = "lock"
    stolen = "stolen"
    other = "other"


class ReportBikeIssue(BaseModel):
    """Log a fault or a theft for one bike."""
    bike_number: str = Field(pattern=r"^[0-9]{5}$")
    fault_type: FaultType
    station_code: Optional[str] = None
    details: Optional[str] = None


TOOLS = {
    "end_ride": EndRide,
    "issue_refund": IssueRefund,
    "buy_pass": BuyPass,
    "report_bike_issue": ReportBikeIssue,
}

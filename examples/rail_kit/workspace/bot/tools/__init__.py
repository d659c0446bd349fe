"""Tools the Vale chat bot can call.

Every tool validates its input with a pydantic model, so a bad call comes back to the agent as
the ValidationError text.
"""
from .book_assistance import book_assistance
from .report_lost_item import report_lost_item
from .reserve_bike_space import reserve_bike_space
from .submit_delay_repay import submit_delay_repay

ALL_TOOLS = [book_assistance, submit_delay_repay, reserve_bike_space, report_lost_item]

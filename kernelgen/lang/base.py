"""The base of the language's nodes: the node class, names and the integer fields' validation,
shared by :mod:`kernelgen.lang.nodes` (expressions and statements) and
:mod:`kernelgen.lang.host_nodes` (the kernel's host side), which import them from here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

FLOAT_LITERAL_NAMES = ("inf", "-inf", "nan")
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _not_a_literal(name: str) -> str:
    """A bound name spelled like a float literal would never be read: its uses are the literal."""
    if name in FLOAT_LITERAL_NAMES:
        raise PydanticCustomError("reserved_name", "'{name}' is a float literal, not a name; choose another name",
                                  {"name": name})
    return name


def _exact_int(value: Any) -> Any:
    """Pydantic's strict mode still lets ``true`` and ``4.0`` through a Literal of ints (they
    compare equal); an integer field of the language takes JSON integers only."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


Name = Annotated[str, Field(pattern=IDENTIFIER), AfterValidator(_not_a_literal)]
# Software-pipelining depth of loops (Triton's num_stages).
Stages = Annotated[Literal[1, 2, 3, 4, 5, 6, 7, 8], BeforeValidator(_exact_int)]


class Node(BaseModel):
    """Strict: no coercion, so ``true`` or ``1500.0`` where an int goes, ``1`` where a bool
    goes, are schema errors rather than silently read as another value."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

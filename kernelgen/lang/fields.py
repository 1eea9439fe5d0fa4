"""The kernel language's field types that carry no node: names, block dimensions, pipelining
depths, and the validators behind them (strict JSON integers, names that are not float
literals). :mod:`kernelgen.lang.nodes` builds every node from them."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

FLOAT_LITERAL_NAMES = ("inf", "-inf", "nan")
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"


def not_a_literal(name: str) -> str:
    """A bound name spelled like a float literal would never be read: its uses are the literal."""
    if name in FLOAT_LITERAL_NAMES:
        raise PydanticCustomError("reserved_name", "'{name}' is a float literal, not a name; choose another name",
                                  {"name": name})
    return name


def exact_int(value: Any) -> Any:
    """Pydantic's strict mode still lets ``true`` and ``4.0`` through a Literal of ints (they
    compare equal); an integer field of the language takes JSON integers only."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


Name = Annotated[str, Field(pattern=IDENTIFIER), AfterValidator(not_a_literal)]
# Software-pipelining depth of loops (Triton's num_stages).
Stages = Annotated[Literal[1, 2, 3, 4, 5, 6, 7, 8], BeforeValidator(exact_int)]
# A dtype variable's name is capitalized, so it never reads as a dtype (all lowercase).
DTYPE_VARIABLE = r"^[A-Z][A-Za-z0-9_]*$"
# How many copies of a loop's body one trip runs (Triton's loop_unroll_factor): 1 or a power of two.
Unroll = Annotated[Literal[1, 2, 4, 8, 16], BeforeValidator(exact_int)]
# A block dimension: a power of two, or the name of a meta-parameter.
Dim = Union[int, Name]

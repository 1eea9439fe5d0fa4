"""The static reading of a TritonBench-T perf script: the timed inputs and the wrapper call,
on shapes and dtypes alone.

``performance_metrics/perf_T/golden_metrics/<stem>_perf.py`` build their timing inputs in
``get_input_tensors()`` and call the operator in ``call_op()``. They import a
``performance_utils`` module that is not part of the data, so they are never imported:
:func:`read_perf_script` follows the two methods' syntax tree (:class:`_PerfScript`), with
tensors modelled by shape and dtype, and says what stopped it where it cannot follow.
The dataset itself (records, prompts, sources, measured results) is read by
:mod:`kernelgen.tritonbench.loader`.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import operator as op
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from kernelgen.tritonbench.signatures import signature_of, top_functions


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PerfTensor(_Frozen):
    """A tensor argument. ``low``: where the script draws ``torch.rand`` (uniform in [0, 1)), plus
    constants, the lower end of that range (``torch.rand(n) + 1e-6``: 1e-6); a runner draws such
    a tensor uniform in [low, low + 1), so an operator that demands positive input (log_tanh)
    gets it. None: drawn from a normal distribution."""

    kind: Literal["tensor"] = "tensor"
    shape: list[int]
    dtype: str
    low: float | None = None


class PerfScalar(_Frozen):
    """A plain value passed to the operator (a float, an int tuple, ``torch.float16``)."""

    kind: Literal["scalar"] = "scalar"
    value: JsonValue


class PerfObject(_Frozen):
    """A value the static reading does not model (an ``nn.Linear``, a loss function): its
    source text."""

    kind: Literal["object"] = "object"
    source: str


class PerfInput(_Frozen):
    """In a :class:`PerfCall`: the case's argument at ``index``."""

    kind: Literal["input"] = "input"
    index: int


PerfArg = Annotated[Union[PerfTensor, PerfScalar, PerfObject], Field(discriminator="kind")]
PerfCallArg = Annotated[Union[PerfInput, PerfTensor, PerfScalar, PerfObject], Field(discriminator="kind")]


class PerfCase(_Frozen):
    """One entry of the perf script's ``input_tensors``: the inputs of one timed call."""

    args: list[PerfArg]


class PerfCall(_Frozen):
    """How the script's ``call_op()`` calls the wrapper on a case: ``logsumexp(case[0],
    dim=0)`` is ``args=[PerfInput(0)], keywords={"dim": 0}``."""

    args: list[PerfCallArg]
    keywords: dict[str, PerfCallArg]


# ---------------------------------------------------------------------------------------------
# Following get_input_tensors() and call_op()


class _Unresolved(Exception):
    """The perf script does something the static reading does not follow."""


@dataclass(frozen=True)
class _Dtype:
    name: str


@dataclass(frozen=True)
class _Tensor:
    shape: tuple[int, ...]
    dtype: str
    low: float | None = None  # torch.rand's range [low, low + 1), where the script keeps it


@dataclass(frozen=True)
class _Ref:
    """A module, class or function known by its dotted name (``torch.nn.Linear``)."""

    dotted: str


@dataclass(frozen=True)
class _Opaque:
    source: str


@dataclass
class _Object:
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Input:
    """In ``call_op()``: the case's argument at ``index``."""

    index: int


class _WrapperCalled(Exception):
    """``call_op()`` reached its call of the operator; reading stops there."""

    def __init__(self, args: list[Any], kwargs: dict[str, Any]) -> None:
        super().__init__()
        self.args_, self.kwargs = args, kwargs


_TORCH_DTYPES = {"float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
                 "bfloat16": "bfloat16", "float64": "float64", "double": "float64", "int64": "int64",
                 "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "short": "int16",
                 "int8": "int8", "uint8": "uint8", "bool": "bool", "complex64": "complex64",
                 "cfloat": "complex64", "complex128": "complex128", "cdouble": "complex128"}
_DTYPE_METHODS = {"float": "float32", "half": "float16", "double": "float64", "long": "int64", "int": "int32",
                  "bool": "bool", "bfloat16": "bfloat16"}
_SHAPE_KEEPING_METHODS = frozenset({
    "cuda", "cpu", "contiguous", "clone", "detach", "requires_grad_", "abs", "abs_", "exp", "log", "sqrt",
    "neg", "sigmoid", "tanh", "relu", "softmax", "log_softmax", "clamp", "clamp_", "clamp_min", "normal_",
    "uniform_", "fill_", "zero_", "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "pow", "sign",
    "square", "sin", "cos", "exp_", "log_", "sqrt_", "round", "floor", "ceil", "tril", "triu", "pin_memory"})
_FLOAT_FACTORIES = frozenset({"rand", "randn", "zeros", "ones", "empty"})
_LIKE_FACTORIES = frozenset({"rand_like", "randn_like", "zeros_like", "ones_like", "empty_like", "full_like"})
_BINARY = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.truediv, ast.FloorDiv: op.floordiv,
           ast.Mod: op.mod, ast.Pow: op.pow}
_COMPARE = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt, ast.GtE: op.ge,
            ast.Is: op.is_, ast.IsNot: op.is_not, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_BUILTINS: dict[str, Callable[..., Any]] = {
    "range": range, "len": len, "int": int, "float": float, "min": min, "max": max, "abs": abs,
    "round": round, "tuple": tuple, "list": list, "zip": lambda *a: list(zip(*a)),
    "enumerate": lambda *a: list(enumerate(*a)), "bool": bool, "sum": sum}
_MAX_STEPS = 100_000


_OPERATOR_MODULE = "TorchBench_v1."
"""Perf scripts import the operator under test as ``from TorchBench_v1.<op> import <wrapper>``."""


def read_perf_script(module: ast.Module) -> tuple[list[PerfCase] | None, PerfCall | None, str | None]:
    """The timed cases and the wrapper call of a perf script, each None where the static
    reading cannot follow the script, with what stopped it."""
    script = _PerfScript(module)
    try:
        inputs = script.inputs()
    except _Unresolved as exc:
        return None, None, f"get_input_tensors(): {exc}"
    cases = [PerfCase(args=[_perf_arg(v) for v in _case_args(item)]) for item in inputs]
    try:
        call = script.operator_call(inputs[0] if inputs else ())
    except _Unresolved as exc:
        return cases, None, f"call_op(): {exc}"
    return cases, call, None


def _case_args(item: Any) -> list[Any]:
    return list(item) if isinstance(item, (tuple, list)) else [item]


class _PerfScript:
    """Follows a perf script's ``get_input_tensors()`` and ``call_op()`` on shapes and dtypes
    alone.

    The scripts subclass ``Performance_Metrics`` (absent from the data) and append one tuple
    of arguments per timed call to ``self.input_tensors``, with loops over ``range``, tuple
    unpacking, ``torch.rand(...)``-style factories and ``self.dtype or torch.float32``;
    ``call_op(case)`` unpacks a case and calls the operator. This evaluates exactly those
    constructs: tensors become (shape, dtype) and are never allocated; the constructor's
    defaults bind ``self`` (``self.dtype`` is its ``dtype`` default, as the base class stores
    it); a factory called with ``dtype=None`` gets torch's default float32. Calls it does not
    model (``nn.Linear(...)``) become opaque values; anything else that it cannot follow (a
    ``while`` loop, a helper method) raises :class:`_Unresolved`.
    """

    def __init__(self, module: ast.Module) -> None:
        self.globals: dict[str, Any] = {}
        self.steps = 0
        self.this = _Object()
        self.run([s for s in module.body if isinstance(s, (ast.Import, ast.ImportFrom))], self.globals)
        self.methods = next((top_functions(ast.Module(body=node.body, type_ignores=[]))
                             for node in module.body if isinstance(node, ast.ClassDef)
                             and any(isinstance(m, ast.FunctionDef) and m.name == "get_input_tensors"
                                     for m in node.body)), {})

    def inputs(self) -> list[Any]:
        """``self.input_tensors`` after the constructor and ``get_input_tensors()`` ran."""
        if "get_input_tensors" not in self.methods:
            raise _Unresolved("no class defines get_input_tensors()")
        init = self.methods.get("__init__")
        if init is not None:
            env: dict[str, Any] = {"self": self.this}
            for p in signature_of(init).params[1:]:
                if p.kind in ("var_positional", "var_keyword"):
                    env[p.name] = () if p.kind == "var_positional" else {}
                elif p.default is not None:
                    env[p.name] = self.eval(ast.parse(p.default, mode="eval").body, env)
            self.this.attrs["dtype"] = env.get("dtype")
            self.run([s for s in init.body if not _calls_super(s)], env)
        self.run(self.methods["get_input_tensors"].body, {"self": self.this})
        inputs = self.this.attrs.get("input_tensors")
        if not isinstance(inputs, list):
            raise _Unresolved("it leaves no list in self.input_tensors")
        return inputs

    def operator_call(self, case: Any) -> PerfCall:
        """The operator call ``call_op()`` makes on a case shaped like ``case``."""
        method = self.methods.get("call_op")
        if method is None or len(method.args.args) != 2:
            raise _Unresolved("no method call_op(self, case)")
        size = len(case) if isinstance(case, (tuple, list)) else None
        marker = _Input(0) if size is None else tuple(_Input(i) for i in range(size))
        try:
            self.run(method.body, {"self": self.this, method.args.args[1].arg: marker})
        except _WrapperCalled as called:
            return PerfCall(args=[_perf_arg(a) for a in called.args_],
                            keywords={k: _perf_arg(v) for k, v in called.kwargs.items()})
        raise _Unresolved(f"it calls nothing imported from {_OPERATOR_MODULE.rstrip('.')}")

    # Statements

    def step(self) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Unresolved(f"it runs more than {_MAX_STEPS} steps")

    def run(self, statements: list[ast.stmt], env: dict[str, Any]) -> bool:
        """Run statements; True once a ``return`` ran."""
        for s in statements:
            self.step()
            if isinstance(s, ast.Import):
                for alias in s.names:
                    top = alias.name.split(".")[0]  # "import torch.nn" binds torch
                    env[alias.asname or top] = _Ref(alias.name if alias.asname else top)
            elif isinstance(s, ast.ImportFrom):
                for alias in s.names:
                    env[alias.asname or alias.name] = _Ref(f"{s.module or ''}.{alias.name}")
            elif isinstance(s, ast.Assign):
                value = self.eval(s.value, env)
                for target in s.targets:
                    self.assign(target, value, env)
            elif isinstance(s, ast.AnnAssign) and s.value is not None:
                self.assign(s.target, self.eval(s.value, env), env)
            elif isinstance(s, ast.AugAssign):
                load = ast.Name(s.target.id, ast.Load()) if isinstance(s.target, ast.Name) else s.target
                self.assign(s.target, self.binary(s.op, self.eval(load, env), self.eval(s.value, env)), env)
            elif isinstance(s, ast.For) and not s.orelse:
                for item in self.iterate(self.eval(s.iter, env)):
                    self.step()
                    self.assign(s.target, item, env)
                    if self.run(s.body, env):
                        return True
            elif isinstance(s, ast.If):
                if self.run(s.body if self.truth(self.eval(s.test, env)) else s.orelse, env):
                    return True
            elif isinstance(s, ast.Expr):
                self.eval(s.value, env)
            elif isinstance(s, ast.Return):
                if s.value is not None:
                    self.eval(s.value, env)
                return True
            elif not isinstance(s, ast.Pass):
                raise _Unresolved(f"line {s.lineno}: {type(s).__name__} statements are not followed")
        return False

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.iterate(value)
            if len(items) != len(target.elts):
                raise _Unresolved(f"line {target.lineno}: cannot unpack {len(items)} values into {len(target.elts)}")
            for t, v in zip(target.elts, items):
                self.assign(t, v, env)
        elif isinstance(target, ast.Attribute) and isinstance(owner := self.eval(target.value, env), _Object):
            owner.attrs[target.attr] = value
        else:
            raise _Unresolved(f"line {target.lineno}: assignment to {ast.unparse(target)}")

    # Expressions

    def eval(self, node: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            for table in (env, self.globals):
                if node.id in table:
                    return table[node.id]
            if node.id in _BUILTINS:
                return _Ref(node.id)
            raise _Unresolved(f"line {node.lineno}: {node.id!r} has no value here")
        if isinstance(node, (ast.Tuple, ast.List)):
            items: list[Any] = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    items += self.iterate(self.eval(element.value, env))
                else:
                    items.append(self.eval(element, env))
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Attribute):
            return self.attribute(self.eval(node.value, env), node.attr, node)
        if isinstance(node, ast.BinOp):
            return self.binary(node.op, self.eval(node.left, env), self.eval(node.right, env))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
            value = self.eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                return not self.truth(value)
            if isinstance(value, _Tensor):
                return value
            return self.python(op.neg if isinstance(node.op, ast.USub) else op.pos, value)
        if isinstance(node, ast.BoolOp):
            value = None
            for operand in node.values:
                value = self.eval(operand, env)
                if self.truth(value) == isinstance(node.op, ast.Or):
                    break
            return value
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, env)
            for comparison, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node, env)
                if not self.python(_COMPARE[type(comparison)], left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.eval(node.body if self.truth(self.eval(node.test, env)) else node.orelse, env)
        if isinstance(node, ast.Subscript):
            container, index = self.eval(node.value, env), self.eval(node.slice, env)
            if isinstance(container, (tuple, list, str)):
                return self.python(op.getitem, container, index)
        if isinstance(node, ast.Slice):
            bounds = [None if b is None else self.eval(b, env) for b in (node.lower, node.upper, node.step)]
            return slice(*bounds)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1 and not node.generators[0].is_async:
            generator, out = node.generators[0], []
            for item in self.iterate(self.eval(generator.iter, env)):
                self.step()
                scope = dict(env)
                self.assign(generator.target, item, scope)
                if all(self.truth(self.eval(c, scope)) for c in generator.ifs):
                    out.append(self.eval(node.elt, scope))
            return out
        if isinstance(node, ast.Call):
            return self.call(node, env)
        raise _Unresolved(f"line {node.lineno}: {ast.unparse(node)!r} is not followed")

    def truth(self, value: Any) -> bool:
        if isinstance(value, (_Tensor, _Object, _Input)):
            raise _Unresolved("the truth of a tensor or an object")
        return bool(value)

    def python(self, function: Callable[..., Any], *args: Any) -> Any:
        """A Python operation on plain values, with the failures a script could provoke caught."""
        if any(isinstance(a, (_Tensor, _Ref, _Opaque, _Object, _Input)) for a in args):
            raise _Unresolved(f"{getattr(function, '__name__', 'an operation')} on a modelled value")
        try:
            return function(*args)
        except (TypeError, ValueError, ArithmeticError, IndexError, KeyError) as exc:
            raise _Unresolved(f"{type(exc).__name__}: {exc}") from None

    def iterate(self, value: Any) -> list[Any]:
        if isinstance(value, range) and len(value) > _MAX_STEPS:
            raise _Unresolved(f"a loop of {len(value)} iterations")
        if isinstance(value, (range, tuple, list, str)):
            return list(value)
        raise _Unresolved(f"iteration over {_describe(value)}")

    def binary(self, operator_node: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(left, _Tensor) or isinstance(right, _Tensor):
            return _tensor_binary(operator_node, left, right)
        if isinstance(operator_node, ast.Pow) and isinstance(right, int) and abs(right) > 256:
            raise _Unresolved(f"an exponent of {right}")
        if type(operator_node) not in _BINARY:
            raise _Unresolved(f"the operator {type(operator_node).__name__}")
        return self.python(_BINARY[type(operator_node)], left, right)

    def attribute(self, owner: Any, name: str, node: ast.Attribute) -> Any:
        if isinstance(owner, _Ref):
            if owner.dotted == "torch" and name in _TORCH_DTYPES:
                return _Dtype(_TORCH_DTYPES[name])
            return _Ref(f"{owner.dotted}.{name}")
        if isinstance(owner, _Object) and name in owner.attrs:
            return owner.attrs[name]
        if isinstance(owner, _Tensor):
            if name == "shape":
                return owner.shape
            if name == "dtype":
                return _Dtype(owner.dtype)
            if name == "ndim":
                return len(owner.shape)
            if name == "T":
                return _Tensor(owner.shape[::-1], owner.dtype)
        if isinstance(owner, _Opaque):
            return _Opaque(ast.unparse(node))
        raise _Unresolved(f"line {node.lineno}: {ast.unparse(node)!r} is not followed")

    def call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args += self.iterate(self.eval(a.value, env))
            else:
                args.append(self.eval(a, env))
        if any(k.arg is None for k in node.keywords):
            raise _Unresolved(f"line {node.lineno}: **kwargs in a call")
        kwargs = {k.arg: self.eval(k.value, env) for k in node.keywords if k.arg is not None}
        if isinstance(node.func, ast.Attribute):
            receiver = self.eval(node.func.value, env)
            name = node.func.attr
            if isinstance(receiver, list) and name in ("append", "extend"):
                receiver.append(args[0]) if name == "append" else receiver.extend(self.iterate(args[0]))
                return None
            if isinstance(receiver, dict) and name == "get":
                return self.python(receiver.get, *args)
            if isinstance(receiver, _Tensor):
                return _tensor_method(receiver, name, args, kwargs, node)
            if isinstance(receiver, _Opaque):
                return _Opaque(ast.unparse(node))
            function = self.attribute(receiver, name, node.func)
        else:
            function = self.eval(node.func, env)
        if not isinstance(function, _Ref):
            raise _Unresolved(f"line {node.lineno}: call of {ast.unparse(node.func)}")
        if function.dotted.startswith(_OPERATOR_MODULE):
            raise _WrapperCalled(args, kwargs)
        if function.dotted in _BUILTINS:
            return self.python(functools.partial(_BUILTINS[function.dotted], **kwargs), *args)
        if function.dotted.startswith("math.") and callable(getattr(math, function.dotted[5:], None)):
            return self.python(getattr(math, function.dotted[5:]), *args)
        if function.dotted.startswith("torch.") and "." not in function.dotted[6:]:
            made = _torch_factory(function.dotted[6:], args, kwargs, node)
            if made is not None:
                return made
        return _Opaque(ast.unparse(node))


def _calls_super(statement: ast.stmt) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super"
               for n in ast.walk(statement))


def _dims(value: Any, node: ast.AST) -> tuple[int, ...]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in items):
        raise _Unresolved(f"line {getattr(node, 'lineno', '?')}: a shape of {_describe(value)}")
    return tuple(items)


def _dtype_of(kwargs: dict[str, Any], default: str) -> str:
    dtype = kwargs.get("dtype")
    return dtype.name if isinstance(dtype, _Dtype) else default


def _nested_shape(data: Any) -> tuple[int, ...]:
    if isinstance(data, (list, tuple)):
        return (len(data),) + (_nested_shape(data[0]) if data else ())
    return ()


def _flatten(data: Any) -> list[Any]:
    return [x for item in data for x in _flatten(item)] if isinstance(data, (list, tuple)) else [data]


def _torch_factory(name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> _Tensor | None:
    """The tensor a ``torch.<name>(...)`` factory makes, or None for any other torch call."""
    if name in _FLOAT_FACTORIES:
        shape = kwargs["size"] if "size" in kwargs else args[0] if len(args) == 1 else tuple(args)
        return _Tensor(_dims(shape, node), _dtype_of(kwargs, "float32"), 0.0 if name == "rand" else None)
    if name == "randint":
        shape = kwargs.get("size", args[-1] if args else None)
        return _Tensor(_dims(shape, node), _dtype_of(kwargs, "int64"))
    if name == "full" and len(args) >= 2:
        fill = args[1]
        default = "bool" if isinstance(fill, bool) else "int64" if isinstance(fill, int) else "float32"
        return _Tensor(_dims(args[0], node), _dtype_of(kwargs, default))
    if name in _LIKE_FACTORIES and args and isinstance(args[0], _Tensor):
        return _Tensor(args[0].shape, _dtype_of(kwargs, args[0].dtype))
    if name == "tensor" and args:
        values = _flatten(args[0])
        default = ("bool" if all(isinstance(v, bool) for v in values) else
                   "int64" if all(isinstance(v, int) for v in values) else "float32")
        return _Tensor(_nested_shape(args[0]), _dtype_of(kwargs, default))
    if name == "arange" and args and all(isinstance(a, (int, float)) for a in args):
        start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
        default = "int64" if all(isinstance(a, int) for a in args) else "float32"
        return _Tensor((max(0, math.ceil((end - start) / step)),), _dtype_of(kwargs, default))
    if name == "randperm" and args:
        return _Tensor(_dims(args[0], node), _dtype_of(kwargs, "int64"))
    if name == "eye" and args:
        return _Tensor(_dims((args[0], args[1] if len(args) > 1 else args[0]), node), _dtype_of(kwargs, "float32"))
    if name in ("linspace", "logspace") and len(args) >= 3:
        return _Tensor(_dims(args[2], node), _dtype_of(kwargs, "float32"))
    return None


def _tensor_method(tensor: _Tensor, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
    if name in _DTYPE_METHODS:
        return _Tensor(tensor.shape, _DTYPE_METHODS[name])
    if name == "to":
        dtype = next((a for a in [*args, kwargs.get("dtype")] if isinstance(a, _Dtype)), None)
        return _Tensor(tensor.shape, dtype.name if dtype else tensor.dtype)
    if name in _SHAPE_KEEPING_METHODS:
        return tensor
    if name == "t" and len(tensor.shape) <= 2:
        return _Tensor(tensor.shape[::-1], tensor.dtype)
    if name == "unsqueeze" and len(args) == 1 and isinstance(args[0], int):
        at = args[0] if args[0] >= 0 else len(tensor.shape) + 1 + args[0]
        return _Tensor(tensor.shape[:at] + (1,) + tensor.shape[at:], tensor.dtype)
    if name in ("view", "reshape"):
        shape = list(args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args)
        if shape.count(-1) == 1:
            known = math.prod(d for d in shape if d != -1)
            shape[shape.index(-1)] = math.prod(tensor.shape) // known if known else 0
        return _Tensor(_dims(tuple(shape), node), tensor.dtype)
    return _Opaque(ast.unparse(node))


def _tensor_binary(operator_node: ast.operator, left: Any, right: Any) -> _Tensor:
    tensors = [v for v in (left, right) if isinstance(v, _Tensor)]
    others = [v for v in (left, right) if not isinstance(v, _Tensor)]
    if any(not isinstance(v, (int, float, bool)) for v in others):
        raise _Unresolved(f"tensor arithmetic with {_describe(others[0])}")
    dtype = tensors[0].dtype
    if any(isinstance(v, float) for v in others) and not dtype.startswith(("float", "bfloat", "complex")):
        dtype = "float32"
    if isinstance(operator_node, ast.MatMult) and len(tensors) == 2:
        a, b = tensors[0].shape, tensors[1].shape
        if len(a) == 2 and len(b) == 2 and a[1] == b[0]:
            return _Tensor((a[0], b[1]), dtype)
        raise _Unresolved(f"a matmul of shapes {list(a)} and {list(b)}")
    shapes = [t.shape for t in tensors]
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise _Unresolved(f"shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    # rand() + c (either side) keeps a known range; any other arithmetic forgets it.
    shift = others[0] if len(tensors) == 1 and others else None
    low = (tensors[0].low + shift if isinstance(operator_node, ast.Add) and tensors[0].low is not None
           and isinstance(shift, (int, float)) and not isinstance(shift, bool) else None)
    return _Tensor(tuple(out), dtype, low)


def _describe(value: Any) -> str:
    if isinstance(value, _Tensor):
        return f"a {value.dtype} tensor of shape {list(value.shape)}"
    if isinstance(value, _Opaque):
        return value.source
    if isinstance(value, _Ref):
        return value.dotted
    if isinstance(value, _Dtype):
        return f"torch.{value.name}"
    if isinstance(value, _Object):
        return "self"
    if isinstance(value, _Input):
        return f"case[{value.index}]"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    return repr(value)


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _perf_arg(value: Any) -> PerfInput | PerfTensor | PerfScalar | PerfObject:
    if isinstance(value, _Input):
        return PerfInput(index=value.index)
    if isinstance(value, _Tensor):
        return PerfTensor(shape=list(value.shape), dtype=value.dtype, low=value.low)
    if isinstance(value, _Dtype):
        return PerfScalar(value=f"torch.{value.name}")
    if _plain(value):
        return PerfScalar(value=json.loads(json.dumps(value)))
    return PerfObject(source=_describe(value))

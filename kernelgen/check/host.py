"""The checker's host side: inputs, outputs, params, sizes and grid, and the host expressions they use.

A mixin that :class:`kernelgen.check.checker._Checker` inherits, kept apart from the kernel body's
typing: these rules are about what the launcher computes on the host before a launch (tensor
declarations, optional and host-only inputs, views, param bindings), not about the kernel's
expressions. It calls the checker's own methods through ``self`` and does not import checker.py back.
"""

from __future__ import annotations

from kernelgen.lang import nodes as L
from kernelgen.check.checked import (ANY_INT_DTYPES, INT_DTYPES, WIDE_FLOAT_DTYPES, HostTensor, ParamBinding, ValueType, _Invalid, child,
                              device_dependent)
from kernelgen.lang.limits import literal_problem
from kernelgen.check.polymorphism import TUPLE_ROLES, ints_of, signature_problems

# The host expressions of logic: comparisons give bool, and/or take bools, where selects.
HOST_LOGIC = ("eq", "ne", "lt", "le", "gt", "ge", "and", "or", "where")


class HostChecks:
    """The host-side half of the checker: needs the attributes :class:`kernelgen.check.checker._Checker` sets."""

    # -- host side --------------------------------------------------------------------------

    def check_host(self) -> None:
        k = self.kernel
        seen: dict[str, str] = {}

        def declare(name: str, what: str, path: str) -> bool:
            if name in seen:
                self.error(path, "duplicate_name", f"{name!r} is already the name of {seen[name]}")
                return False
            seen[name] = what
            return True

        for i, inp in enumerate(k.inputs):
            path = f"/inputs/{i}"
            if not declare(inp.name, "an input", child(path, "name")):
                continue
            if inp.binds is not None and inp.role != "dtype":
                self.error(child(path, "binds"), "bad_signature", "'binds' goes with role 'dtype'")
            if inp.present is not None and not ((inp.is_plain or inp.role in TUPLE_ROLES) and inp.optional
                                                and inp.default is None):
                self.error(child(path, "present"), "bad_signature",
                           "'present' goes with a tensor, scalar, ints or floats argument of default null")
            if not inp.is_plain:
                self.host_only_input(inp, i, declare)
                continue
            if inp.dtype is None:
                self.error(child(path, "dtype"), "bad_signature", f"input {inp.name!r} needs a dtype")
                continue
            if inp.choices is not None:
                self.error(child(path, "choices"), "bad_signature", "choices go with role 'choice'")
            if inp.number and inp.shape is None:
                self.error(child(path, "number"), "bad_signature", "'number' is for tensor inputs (a scalar takes numbers)")
            if inp.shape is None:
                self.scalars[inp.name] = inp.dtype
                if inp.optional and inp.default is None:
                    self.presence_flag(inp, i, declare)
                continue
            for j, dim in enumerate(inp.shape):
                if isinstance(dim, int):
                    if dim < 1:
                        self.error(child(path, "shape", j), "bad_value", f"a fixed size must be >= 1, got {dim}")
                elif dim not in self.sizes:
                    if declare(dim, "a size", child(path, "shape", j)):
                        self.sizes.append(dim)
                elif seen.get(dim) != "a size":
                    self.error(child(path, "shape", j), "duplicate_name", f"{dim!r} is not a size")
            self.tensors[inp.name] = HostTensor(inp.name, inp.dtype, tuple(inp.shape), False)
            if inp.optional and inp.default is None:
                self.optional_tensor(inp, i, declare)

        self.check_view()
        for problem in signature_problems(k):
            self.error(problem.path, problem.code, problem.message)

        for i, m in enumerate(k.meta):
            path = f"/meta/{i}"
            declare(m.name, "a meta-parameter", child(path, "name"))
            if m.when:  # a generic kernel's variants have them resolved (kernelgen.lang.generic.instantiate)
                self.error(child(path, "when"), "bad_dtype_variable", "a meta value by dtype needs a dtype variable: "
                           "the kernel declares none")
            if m.name in self.meta_override:
                self.meta[m.name] = self.meta_override.pop(m.name)
            if self.meta[m.name] < 1:
                self.error(child(path, "value"), "bad_value", f"a meta value must be >= 1, got {self.meta[m.name]}")
            elif (problem := literal_problem(self.meta[m.name], "i32")) is not None:
                # Meta values are i32 constants in the kernel.
                self.error(child(path, "value"), "literal_out_of_range", problem)
        for name in self.meta_override:
            self.error("/meta", "undefined_name", f"meta override {name!r} is not a meta-parameter of this kernel")

        self.check_host_values(declare)
        for i, out in enumerate(k.outputs):
            path = f"/outputs/{i}"
            if not declare(out.name, "an output", child(path, "name")):
                continue
            for j, dim in enumerate(out.shape):
                self.host_int(dim, child(path, "shape", j))
                if device_dependent(dim) and (self.scratch is None or out.name not in self.scratch):
                    self.error(child(path, "shape", j), "device_dependent",
                               f"output {out.name!r}'s shape reads num_sms: what a call returns may not depend on "
                               "the GPU (a scratch tensor's shape may)")
            if out.init is not None and out.dtype in L.DTYPES:
                try:
                    self.fill_value(out.init, out.dtype, child(path, "init"), "output")
                except _Invalid:
                    pass
            self.tensors[out.name] = HostTensor(out.name, out.dtype, tuple(out.shape), True)
        # The inputs outputs alias (by input name: the output's name), where 'into' names one.
        aliased: dict[str, str] = {}
        for i, out in enumerate(k.outputs):
            if self.check_returned(out, f"/outputs/{i}") and aliased.setdefault(out.into, out.name) != out.name:
                self.error(f"/outputs/{i}/alias", "bad_signature", f"{aliased[out.into]!r} already aliases "
                                                                   f"{out.into!r}: one output per input")

        for i, dim in enumerate(k.grid):
            self.host_int(dim, f"/grid/{i}")

        param_names: set[str] = set()
        for i, p in enumerate(k.params):
            path = f"/params/{i}"
            if p.name in param_names:
                self.error(child(path, "name"), "duplicate_name", f"param {p.name!r} is declared twice")
                continue
            if p.name in self.meta:
                self.error(child(path, "name"), "duplicate_name", f"{p.name!r} is already a meta-parameter")
                continue
            param_names.add(p.name)
            binding = self.bind_param(p, path)
            if binding is not None and binding.tensor in aliased:
                # Two names for one buffer would hide a read of x racing a store to out from the
                # race detector and the program-order runs, which track outputs by name.
                self.error(child(path, "value") if p.value is not None else child(path, "name"), "aliased_input",
                           f"output {aliased[binding.tensor]!r} aliases input {binding.tensor!r}: load its values "
                           f"through {aliased[binding.tensor]!r} (it starts as them), bind no param to "
                           f"{binding.tensor!r}")
            elif binding is not None:
                self.params.append(binding)

    def optional_tensor(self, inp: L.Input, index: int, declare) -> None:
        """A tensor the call may omit: its presence is a meta value (a variant per pattern), and
        its sizes come from required tensors (an omitted one is zeros of its shape)."""
        path = f"/inputs/{index}"
        self.presence_flag(inp, index, declare)
        required = {d for i in self.kernel.inputs if i.is_plain and i.shape is not None and not i.optional
                    for d in i.shape}
        for j, dim in enumerate(inp.shape):
            if isinstance(dim, str) and dim not in required:
                self.error(child(path, "shape", j), "bad_signature",
                           f"size {dim!r} of optional tensor {inp.name!r} is in no required tensor's shape")

    def presence_flag(self, inp: L.Input, index: int, declare) -> None:
        """An argument of default null names a meta flag: 1 when the call passes it, else 0."""
        path = f"/inputs/{index}"
        if inp.present is None:
            self.error(path, "bad_signature", f"optional {inp.name!r} of default null names its presence flag "
                                              "in 'present'")
        elif declare(inp.present, "a presence flag", child(path, "present")):
            self.meta[inp.present] = self.meta_override.pop(inp.present, 1)
            if self.meta[inp.present] not in (0, 1):
                self.error(child(path, "present"), "bad_value", f"{inp.present} is 0 or 1, got {self.meta[inp.present]}")

    def host_only_input(self, inp: L.Input, index: int, declare) -> None:
        """Arguments the host consumes (views, out=, flags); a choice is also a meta name."""
        path = f"/inputs/{index}"
        if inp.shape is not None or inp.number:
            self.error(child(path, "shape"), "bad_signature", f"a {inp.role} argument takes no shape")
        if inp.role == "choice":
            if not inp.choices:
                self.error(child(path, "choices"), "bad_signature", "a choice argument lists its choices")
                return
            if inp.optional and inp.default not in inp.choices:
                self.error(child(path, "default"), "bad_signature", f"default {inp.default!r} is not a choice")
                return
            index = inp.choices.index(inp.default) if inp.optional else 0
            self.meta[inp.name] = self.meta_override.pop(inp.name, index)
            if not 0 <= self.meta[inp.name] < len(inp.choices):
                self.error(path, "bad_value", f"{inp.name} has {len(inp.choices)} choices, no index {self.meta[inp.name]}")
        elif inp.choices is not None:
            self.error(child(path, "choices"), "bad_signature", "choices go with role 'choice'")
        if inp.role == "dtype":
            if inp.binds is None:
                self.error(path, "bad_signature", "a dtype argument names the dtype (variable) it binds in 'binds'")
            if inp.optional and inp.default is not None:
                self.error(child(path, "default"), "bad_signature", "a dtype argument's default is null")
        if inp.role == "fixed" and not inp.optional:
            self.error(child(path, "default"), "bad_signature", "a fixed argument needs the default it is fixed at")
        if inp.role == "ints" and inp.items:
            # One meta per item, as a choice is one: a variant per distinct tuple, like Triton's
            # constexpr kernel sizes; any i32 (padding 0 too), the default's or 1.
            defaults = (ints_of(inp.default, len(inp.items)) if inp.optional else None) or (1,) * len(inp.items)
            if inp.optional and inp.default is None:  # None: each item 1, the flag 0
                self.presence_flag(inp, index, declare)
            for j, item in enumerate(inp.items):
                if declare(item, "a meta-parameter", child(path, "items", j)):
                    self.meta[item] = self.meta_override.pop(item, defaults[j])
        if inp.role == "floats" and inp.items:
            # One scalar per item: values the host passes to params, not compile-time constants.
            if inp.dtype not in (None, "f32", "f64"):
                self.error(child(path, "dtype"), "bad_signature", "a floats argument's items are f32 or f64")
            if inp.optional and inp.default is None:  # None: each item 0.0, the flag 0
                self.presence_flag(inp, index, declare)
            for j, item in enumerate(inp.items):
                if declare(item, "a scalar", child(path, "items", j)):
                    self.scalars[item] = "f64" if inp.dtype == "f64" else "f32"
        if inp.role in ("dim", "keepdim") and self.kernel.view != "rows":
            self.error(child(path, "role"), "bad_signature", f"a {inp.role} argument goes with the rows view")

    def check_view(self) -> None:
        """The shapes a view shows the kernel: 1-D [N] (elementwise) or [M, N] (rows)."""
        k = self.kernel
        if k.view is None:
            return
        tensors = [(i, inp) for i, inp in enumerate(k.inputs) if inp.is_plain and inp.shape is not None]
        if k.view == "elementwise":
            wanted = 1
            symbols = {tuple(inp.shape) for _, inp in tensors}
        else:
            wanted = 2
            if not any(inp.role == "dim" for inp in k.inputs):
                self.error("/view", "bad_signature", "the rows view needs a 'dim' argument (role dim)")
            tensors = [(i, inp) for i, inp in tensors if len(inp.shape) == 2]
            symbols = {tuple(inp.shape) for _, inp in tensors}
        if not tensors:
            self.error("/view", "bad_signature", f"the {k.view} view needs a tensor input of rank {wanted}")
            return
        for i, inp in tensors:
            if len(inp.shape) != wanted or not all(isinstance(d, str) for d in inp.shape):
                self.error(f"/inputs/{i}/shape", "bad_signature",
                           f"under the {k.view} view a tensor input is {'[N]' if wanted == 1 else '[M, N]'} (size names)")
        if len(symbols) > 1:
            self.error("/view", "bad_signature",
                       f"the {k.view} view shows every viewed input with one shape, got {sorted(symbols)}")
        for j, out in enumerate(k.outputs):
            if self.scratch is not None and out.name in self.scratch:
                continue  # the view shapes the call's outputs; scratch never meets the call
            if out.raises is None and not 1 <= len(out.shape) <= wanted:
                self.error(f"/outputs/{j}/shape", "bad_signature",
                           f"under the {k.view} view an output has rank {'1' if wanted == 1 else '1 or 2'}")

    def host_type(self, expr: L.Expr, path: str) -> str:
        """Type a host expression: 'int', 'float', 'bool' or 'tensor:NAME'."""
        if isinstance(expr, bool):
            return "bool"
        if isinstance(expr, int):
            self.number(expr, path)
            return "int"
        if isinstance(expr, float) or expr in L.FLOAT_LITERAL_NAMES:
            self.number(expr, path)
            return "float"
        if isinstance(expr, str):
            if expr in self.host_values:
                if self.host_values[expr] is None:
                    raise _Invalid()  # its definition is wrong, and reported
                return self.host_values[expr]
            if expr in self.sizes or expr in self.meta:
                return "int"
            if expr in self.scalars:
                dtype = self.scalars[expr]
                return "int" if dtype in ANY_INT_DTYPES else "bool" if dtype == "bool" else "float"
            if expr in self.tensors:
                return f"tensor:{expr}"
            later = " yet (host values are evaluated in order)" if expr in self.later_host_values else ""
            raise self.fail(path, "undefined_name",
                            f"{expr!r} is not an input, output, size, scalar, meta or host value name{later}")
        if isinstance(expr, L.DeviceInfo):
            return "int"
        if isinstance(expr, L.TensorInfo):
            if expr.of not in self.tensors:
                raise self.fail(child(path, "of"), "undefined_name", f"{expr.of!r} is not a tensor")
            rank = len(self.tensors[expr.of].shape)
            if expr.op == "stride" and not 0 <= expr.dim < rank:
                raise self.fail(child(path, "dim"), "bad_axis", f"{expr.of!r} has rank {rank}, no dim {expr.dim}")
            return "int"
        if isinstance(expr, L.Binary) and expr.op in ("add", "sub", "mul", "idiv", "cdiv", "rem",
                                                        "maximum", "minimum"):
            lhs = self.host_type(expr.lhs, child(path, "lhs"))
            rhs = self.host_type(expr.rhs, child(path, "rhs"))
            for side, t in (("lhs", lhs), ("rhs", rhs)):
                if t != "int":
                    raise self.fail(child(path, side), "needs_int",
                                    f"host arithmetic takes integers, got {t}")
            return "int"
        if isinstance(expr, (L.Binary, L.Where)) and expr.op in HOST_LOGIC:
            return self.host_logic(expr, path)
        raise self.fail(path, "device_only",
                        f"{getattr(expr, 'op', expr)!r} cannot be computed on the host; host "
                        "expressions use sizes, scalars, meta, stride, numel, num_sms, + - * idiv cdiv rem maximum "
                        "minimum, comparisons, and, or, where")

    def host_logic(self, expr: L.Binary | L.Where, path: str) -> str:
        """A comparison of numbers or bools (bool), ``and``/``or`` of bools, ``where`` over a bool."""
        if isinstance(expr, L.Where):
            if (cond := self.host_type(expr.cond, child(path, "cond"))) != "bool":
                raise self.fail(child(path, "cond"), "needs_bool", f"a host where's cond is bool, got {cond}")
            x, y = self.host_type(expr.x, child(path, "x")), self.host_type(expr.y, child(path, "y"))
            if x != y or x.startswith("tensor:"):
                raise self.fail(path, "dtype_mismatch", f"a host where's x and y are both int, float or bool, got {x}, {y}")
            return x
        lhs = self.host_type(expr.lhs, child(path, "lhs"))
        rhs = self.host_type(expr.rhs, child(path, "rhs"))
        wanted = {"bool"} if expr.op in ("and", "or") else {"int", "float"} if expr.op not in ("eq", "ne") else \
            {"int", "float", "bool"}
        for side, t in (("lhs", lhs), ("rhs", rhs)):
            if t not in wanted:
                raise self.fail(child(path, side), "needs_bool" if wanted == {"bool"} else "bad_operand",
                                f"host {expr.op} takes {' or '.join(sorted(wanted))}, got {t}")
        if (lhs == "bool") != (rhs == "bool"):
            raise self.fail(path, "bad_operand", f"host {expr.op} compares a bool with a number")
        return "bool"

    def check_host_values(self, declare) -> None:
        """Each host value, in order: a name of its own and a host expression of the names before it."""
        self.later_host_values = {v.name for v in self.kernel.host_values}
        for i, value in enumerate(self.kernel.host_values):
            path = f"/host_values/{i}"
            if not declare(value.name, "a host value", child(path, "name")):
                continue
            try:  # its own name is still a later one here: a value never uses itself
                kind = self.host_type(value.value, child(path, "value"))
            except _Invalid:
                kind = None
            self.later_host_values.discard(value.name)
            if kind is not None and kind.startswith("tensor:"):
                self.error(child(path, "value"), "needs_int", "a host value is a number or a bool, not a tensor")
                kind = None
            self.host_values[value.name] = kind

    def check_returned(self, out: L.Output, path: str) -> bool:
        """``call_shapes`` (view null, not batch) and ``into`` (a tensor input of the output's dtype
        and rank); whether the output aliases the input its ``into`` names."""
        for j, shape in enumerate(out.call_shapes):
            where = child(path, "call_shapes", j)
            if self.kernel.view is not None or out.batch or out.raises is not None:
                self.error(where, "bad_signature", "call_shapes go with view null, a returned output not batch")
                break
            try:
                if (t := self.host_type(shape.when, child(where, "when"))) != "bool":
                    self.error(child(where, "when"), "needs_bool", f"'when' is a bool host expression, got {t}")
            except _Invalid:
                pass
            for d, dim in enumerate(shape.shape):
                self.host_int(dim, child(where, "shape", d))
        if out.into is None:
            if out.alias:
                self.error(child(path, "alias"), "bad_signature", "'alias' goes with 'into': the input it aliases")
            return False
        target = next((i for i in self.kernel.inputs if i.name == out.into and i.is_plain and i.shape is not None), None)
        if target is None or out.raises is not None:
            self.error(child(path, "into"), "bad_signature", f"'into' names a tensor input of a returned output, "
                                                              f"got {out.into!r}")
            return False
        if target.dtype != out.dtype or target.number or target.optional or \
                (len(target.shape) != len(out.shape) and not out.call_shapes):
            self.error(child(path, "into"), "bad_signature", f"{out.into!r} is not a required tensor of "
                                                              f"{out.name}'s dtype and rank")
            return False
        if out.alias:
            self.check_alias(out, target, path)
        return out.alias

    def check_alias(self, out: L.Output, target: L.Input, path: str) -> None:
        """An output that is its ``into`` input's memory: its shape is the input's, dim for dim
        (the launcher hands the kernel that buffer as it is), and nothing reshapes or refills it
        per call: not ``init`` (it starts as the input), ``batch`` or ``call_shapes`` (the call's
        shape is the input's), nor a role ``inplace`` flag (a call with it false would need a
        fresh copy where the plan hands over the caller's tensor)."""
        where = child(path, "alias")
        if out.init is not None or out.batch or out.call_shapes:
            self.error(where, "bad_signature", "an aliasing output takes no init, batch or call_shapes: it starts as "
                                               f"{target.name!r} and has its shape")
        elif any(i.role == "inplace" for i in self.kernel.inputs):
            self.error(where, "bad_signature", "an aliasing output always changes its input: drop the role "
                                               "'inplace' flag, or alias")
        elif list(out.shape) != list(target.shape):
            self.error(child(path, "shape"), "bad_signature", f"an aliasing output has its input's shape "
                                                               f"{list(target.shape)}, got {list(out.shape)}")

    def host_int(self, expr: L.Expr, path: str) -> None:
        try:
            t = self.host_type(expr, path)
        except _Invalid:
            return
        if t != "int":
            self.error(path, "needs_int", f"expected an integer host expression, got {t}")

    def bind_param(self, p: L.Param, path: str) -> ParamBinding | None:
        value = p.name if p.value is None else p.value
        vpath = child(path, "value") if p.value is not None else child(path, "name")
        try:
            t = self.host_type(value, vpath)
        except _Invalid:
            return None
        if t.startswith("tensor:"):
            tensor = self.tensors[t.split(":", 1)[1]]
            if p.dtype is not None:
                self.error(child(path, "dtype"), "bad_binding",
                           f"param {p.name!r} is a pointer to {tensor.name!r}; it takes no dtype")
            return ParamBinding(p.name, ValueType(tensor.dtype, pointer=True, bases=frozenset([tensor.name])),
                                tensor.name, None)
        if t == "int":
            dtype = p.dtype or (self.scalars.get(value) if isinstance(value, str) else None) or "i32"
            if dtype not in INT_DTYPES and dtype not in WIDE_FLOAT_DTYPES:
                dtype = "i32"
            problem = literal_problem(value, dtype) if isinstance(value, int) else None
            if problem is not None:
                self.error(vpath, "literal_out_of_range", f"{problem}, the dtype of param {p.name!r}")
                return None
        elif t == "float":
            own = self.scalars.get(value) if isinstance(value, str) else None
            dtype = p.dtype or ("f64" if own == "f64" else "f32")
            if dtype not in WIDE_FLOAT_DTYPES:
                self.error(child(path, "dtype"), "bad_binding",
                           f"a float value binds to an f32 or f64 param, not {dtype}")
                return None
        else:
            dtype = "i32"
        return ParamBinding(p.name, ValueType(dtype), None, value)

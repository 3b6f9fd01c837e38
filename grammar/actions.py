"""Reduction callbacks for expressions, functions and modules: they build the IR directly.

Markers reduced before the construct they open do the scoping: `let_head` binds the let
variable (so it is in scope in its own value), `def_sig`/`fn_sig` bind parameters in a new
scope, `arm_head` binds pattern variables in a new scope. Brackets also delimit scopes:
the driver calls `open_scope` when it shifts `(`, `[` or `{`, `close_scope` for `)`, `]`
or `}`, and `next_element` for `,` (so `(let %x = 1; %x, %x)` does not see `%x` in the second
element). Brackets always balance in a successful parse, so these calls do too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lark import Token

from ..lang.adt import Constructor
from ..lang.attrs import FuncAttrs
from ..lang.diagnostics import AttrsError
from ..lang.expr import (
    Call,
    Clause,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Match,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..lang.module import IRModule
from ..lang.op import Op, lookup_op
from .errors import did_you_mean, operator_or_constructor_note
from .state import Ref
from .type_actions import TypeActions

_INFIX = {
    "*": ("multiply", 4),
    "/": ("divide", 4),
    "+": ("add", 3),
    "-": ("subtract", 3),
    "<": ("less", 2),
    "<=": ("less_equal", 2),
    ">": ("greater", 2),
    ">=": ("greater_equal", 2),
    "==": ("equal", 1),
    "!=": ("not_equal", 1),
}
_NO_DEFAULT = object()


class Actions(TypeActions):
    """All reduction callbacks; one instance serves every parse (under a lock)."""

    # ------------------------------------------------------------------ entry points
    def header(self, c: list[Any]) -> None:
        """`#[version = "0.0.5"]`"""
        token = c[0]
        content = token[2:-1].strip()
        key, _, value = (part.strip() for part in content.partition("="))
        if key == "version":
            if value != '"0.0.5"':
                self.error(token, f'unsupported version {value or "(none)"}: expected "0.0.5"')
            return
        if content == "metadata":
            self.error(token, "#[metadata] must be at the start of a line")
        self.error(token, f"unknown directive `{token}`")

    def module(self, c: list[Any]) -> IRModule:
        """The whole module: checks that every used global and ADT is defined."""
        self.check_definitions()
        functions = self.functions
        types = {data.header: data for data, _ in self.type_defs.values()}
        if self.prelude is not None and self.prelude.used:
            prelude_functions, prelude_types = self.prelude.definitions()
            functions = {**functions, **prelude_functions}
            types.update(prelude_types)
        return IRModule(functions, types)

    def expression(self, c: list[Any]) -> Expr:
        """A standalone expression."""
        return c[-1]  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ scopes
    def open_scope(self) -> None:
        """`(`, `[` or `{` shifted: a nested scope (closed when its bracket closes)."""
        self.vars.push()

    def close_scope(self) -> None:
        """`)`, `]` or `}` shifted."""
        self.vars.pop()

    def next_element(self) -> None:
        """`,` shifted: the bindings made by the previous list element end here."""
        self.vars.reset()

    def body(self, c: list[Any]) -> tuple[Expr, Token]:
        """`{ expr }` of a function or branch: the expression and the closing brace."""
        return c[1], c[2]

    def block_value(self, c: list[Any]) -> Expr:
        """`{ expr }` used as a value."""
        return c[1]  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ bindings
    def let_head(self, c: list[Any]) -> tuple[Var, Token]:
        """`let %x: T =`: binds `%x` before its value is parsed (recursive closures)."""
        token = c[1]
        var = Var(token[1:], c[3] if len(c) > 3 else None, span=self.token_span(token))
        self.vars.bind(token.value, var)
        return var, c[0]

    def let_expr(self, c: list[Any]) -> Expr:
        """`let %x = value; body`"""
        var, keyword = c[0]
        body = c[3]
        return Let(var, c[1], body, span=self.span(keyword, self.body_end(body)))

    def graph_bind(self, c: list[Any]) -> None:
        """`%N = value;`: later `%N` denote the same node."""
        token = c[0]
        previous = self.graph.get(token.value)
        if previous is not None:
            first = self.token_span(previous[1])
            self.error(token, f"graph variable {token} is already bound", f"first bound at {first}")
        self.graph[token.value] = (c[2], token)

    def graph_expr(self, c: list[Any]) -> Expr:
        """The body after a graph binding."""
        return c[1]  # type: ignore[no-any-return]

    def free_var_decl(self, c: list[Any]) -> None:
        """`free_var %x: T;`"""
        token = c[1]
        var = Var(token[1:], c[3] if len(c) > 3 else None, span=self.token_span(token))
        self.vars.bind(str(token), var)

    def free_var_expr(self, c: list[Any]) -> Expr:
        """The body after a `free_var` declaration."""
        return c[1]  # type: ignore[no-any-return]

    def seq_expr(self, c: list[Any]) -> Expr:
        """`e1; e2`: a let of a fresh, unnamed variable."""
        value, semicolon, body = c
        span = self.span(value if value.span is not None else semicolon, self.body_end(body))
        return Let(Var("", span=span), value, body, span=span)

    # ------------------------------------------------------------------ references
    def local_ref(self, c: list[Any]) -> Ref:
        """`%x`"""
        token = c[0]
        var = self.vars.names.get(token.value)  # a plain str key: Token.__eq__ is slow
        if var is None:
            self.error(
                token, f"undeclared variable {token}", *did_you_mean(token.value, self.vars.names)
            )
        return Ref(var, token, token)

    def graph_ref(self, c: list[Any]) -> Ref:
        """`%N`: the node bound to `%N`."""
        token = c[0]
        bound = self.graph.get(token.value)
        if bound is None:
            self.error(token, f"graph variable {token} is used before it is bound")
        return Ref(bound[0], token, token)

    def global_ref(self, c: list[Any]) -> Ref:
        """`@f`"""
        return Ref(self.global_var(c[0], use=True), c[0], c[0])

    def name_ref(self, c: list[Any]) -> Ref:
        """A constructor declared earlier, else an operator, else a prelude constructor."""
        token = c[0]
        name = token.value
        node: Expr | None = self.constructors.get(name)
        if node is None:
            node = lookup_op(name)
            if node is None:
                node = self.constructor(token)
                if node is None:
                    self.error(
                        token,
                        f"unknown operator or constructor `{token}`",
                        *operator_or_constructor_note(self, name),
                    )
        return Ref(node, token, token)

    def unwrap(self, x: Any) -> Expr:
        """The expression of a reference (a bare nullary constructor means a call of it)."""
        if type(x) is not Ref:
            return x  # type: ignore[no-any-return]
        node = x.node
        if type(node) is Constructor and not node.inputs:
            return Call(node, (), span=self.span(x, x))
        return node

    def value_postfix(self, c: list[Any]) -> Expr:
        """A call, projection or atom used as a value."""
        x = c[0]
        if type(x) is Ref:
            node = self.unwrap(x) if type(x.node) is Constructor else x.node
            self.last_use = (node, x.last)
            return node
        return x  # type: ignore[no-any-return]

    def body_end(self, body: Expr) -> Any:
        """What a binding's span ends with: the last token of `body` when it is a bare
        reference (its node's own span is where it was bound), else `body`."""
        last = self.last_use
        return last[1] if last is not None and last[0] is body else body

    # ------------------------------------------------------------------ literals, meta
    def literal(self, c: list[Any]) -> Expr:
        """A numeric literal: a rank-0 constant."""
        token = c[0]
        return Constant(self.constant_of(token), span=self.token_span(token))

    def bool_literal(self, c: list[Any]) -> Expr:
        """`True` / `False`"""
        token = c[0]
        return Constant(np.array(token == "True"), span=self.token_span(token))

    def meta_expr(self, c: list[Any]) -> Expr:
        """`meta[relay.Constant][i]`"""
        token = c[0]
        obj = self.meta_object(token)
        if not isinstance(obj, np.ndarray):
            self.error(token, f"`{token}` is not a constant and cannot be used as an expression")
        return Constant(obj, span=self.token_span(token))

    # ------------------------------------------------------------------ compound values
    def unit(self, c: list[Any]) -> Expr:
        """`()`"""
        return Tuple((), span=self.span(c[0], c[1]))

    def paren(self, c: list[Any]) -> Ref:
        """`(e)`: `e` itself, remembered with the parentheses' position."""
        return Ref(c[1], c[0], c[2])

    def tuple_expr(self, c: list[Any]) -> Expr:
        """`(a,)`, `(a, b)`, `(a, b,)`"""
        items = c[1] if isinstance(c[1], list) else [c[1]]
        return Tuple(items, span=self.span(c[0], c[-1]))

    def tuple_items(self, c: list[Any]) -> list[Expr]:
        """At least two tuple elements."""
        if isinstance(c[0], list):
            c[0].append(c[2])
            return c[0]
        return [c[0], c[2]]

    def project(self, c: list[Any]) -> Expr:
        """`t.0`"""
        index = c[2]
        if len(index) > 9:
            self.error(index, f"tuple index {index} is too large")
        return TupleGetItem(self.unwrap(c[0]), int(index), span=self.span(c[0], index))

    def infix(self, c: list[Any]) -> Expr:
        """`a + b * c ...`: resolved by precedence, all operators left-associative."""
        items = c[0]
        operands: list[Any] = [items[0]]
        operators: list[Token] = []
        for i in range(1, len(items), 2):
            precedence = _INFIX[items[i]][1]
            while operators and _INFIX[operators[-1]][1] >= precedence:
                self._reduce_infix(operands, operators)
            operators.append(items[i])
            operands.append(items[i + 1])
        while operators:
            self._reduce_infix(operands, operators)
        return operands[0]  # type: ignore[no-any-return]

    def _reduce_infix(self, operands: list[Any], operators: list[Token]) -> None:
        rhs = operands.pop()
        lhs = operands.pop()
        token = operators.pop()
        op = lookup_op(_INFIX[token][0])
        if op is None:
            self.error(token, f"operator `{_INFIX[token][0]}` is not declared")
        call = Call(
            op,
            (self.unwrap(lhs), self.unwrap(rhs)),
            self.default_op_attrs(op, token),
            span=self.span(lhs, rhs),
        )
        operands.append(call)

    def oplist(self, c: list[Any]) -> list[Any]:
        """Operands and operator tokens, flat."""
        if type(c[0]) is list:
            c[0].extend(c[1:])
            return c[0]
        return c

    def if_cond(self, c: list[Any]) -> tuple[Expr, Token]:
        """`if (cond)`"""
        return c[2], c[0]

    def if_expr(self, c: list[Any]) -> Expr:
        """`if (cond) { a } else { b }`"""
        cond, keyword = c[0]
        (then, _), (otherwise, rbrace) = c[1], c[3]
        return If(cond, then, otherwise, span=self.span(keyword, rbrace))

    def ref_create(self, c: list[Any]) -> Expr:
        """`ref(e)`"""
        return RefCreate(c[2], span=self.span(c[0], c[3]))

    def ref_read(self, c: list[Any]) -> Expr:
        """`ref_read(r)`"""
        return RefRead(c[2], span=self.span(c[0], c[3]))

    def ref_write(self, c: list[Any]) -> Expr:
        """`ref_write(r, v)`"""
        return RefWrite(c[2], c[4], span=self.span(c[0], c[5]))

    def match_expr(self, c: list[Any]) -> Expr:
        """`match (e) { arms }` / `match? (e) { arms }`"""
        clauses = c[3] if len(c) > 4 else []
        complete = c[0] == "match"
        return Match(self.unwrap(c[1]), clauses, complete, span=self.span(c[0], c[-1]))

    def clauses(self, c: list[Any]) -> list[Clause]:
        """Match arms."""
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[2])
        return c[0]

    def clause(self, c: list[Any]) -> Clause:
        """`pattern => expr`"""
        self.vars.pop()
        return Clause(c[0], c[1])

    # ------------------------------------------------------------------ calls
    def call_args(self, c: list[Any]) -> tuple[list[Expr], list[Any], Token]:
        """`(args..., key=value, ...)`"""
        args: list[Expr] = []
        attrs: list[Any] = []
        if len(c) > 2:
            for item in c[1]:
                (attrs if type(item) is tuple else args).append(item)
        return args, attrs, c[-1]

    def arg_items(self, c: list[Any]) -> list[Any]:
        """Positional arguments, then keyword attributes."""
        if len(c) == 1:
            return [c[0]]
        items = c[0]
        if type(c[2]) is not tuple and items and type(items[-1]) is tuple:
            self.error(c[1], "positional arguments must come before keyword attributes")
        items.append(c[2])
        return items  # type: ignore[no-any-return]

    def call(self, c: list[Any]) -> Expr:
        """`f(args..., attrs...)`; operator calls get checked attributes."""
        callee_ref = c[0]
        args, attrs, rparen = c[1]
        callee = callee_ref.node if type(callee_ref) is Ref else callee_ref
        if isinstance(callee, Op):
            op_attrs = self.op_attrs(callee, attrs, callee_ref)
        else:
            if attrs:
                self.error(attrs[0][0], "keyword attributes are only allowed in operator calls")
            op_attrs = None
        first = callee_ref.first if type(callee_ref) is Ref else callee_ref
        return Call(callee, args, op_attrs, span=self.span(first, rparen))

    def default_op_attrs(self, op: Op, where: Any) -> Any:
        """The attributes of a call of `op` without keywords (cached per operator)."""
        attrs = self.default_attrs.get(op, _NO_DEFAULT)
        if attrs is _NO_DEFAULT:
            try:
                attrs = op.make_attrs()
            except AttrsError as exc:
                self.error(where, f"{exc.message} (in a call of `{op.name}`)")
            self.default_attrs[op] = attrs
        return attrs

    def op_attrs(self, op: Op, attrs: list[tuple[Token, object]], where: Any) -> Any:
        """Check keyword attributes one by one (errors point at the key), then build."""
        if not attrs:
            return self.default_op_attrs(op, where)
        schema = op.attrs_schema
        values: dict[str, object] = {}
        for key, value in attrs:
            name = str(key)
            if name in values:
                self.error(key, f"duplicate attribute `{name}`")
            value = self.meta_attr_value(value)
            if schema is None:
                self.error(key, f"operator `{op.name}` takes no attributes, got `{name}`")
            field = schema.field_named(name)
            if field is None:
                message = schema.no_attribute_message(name)
                self.error(key, message, *did_you_mean(name, [f.name for f in schema.fields]))
            try:
                field.coerce(value)
            except ValueError as exc:
                self.error(key, f"{schema.name}.{name}: {exc}")
            values[name] = value
        try:
            return op.make_attrs(**values)
        except AttrsError as exc:
            self.error(where, f"{exc.message} (in a call of `{op.name}`)")

    # ------------------------------------------------------------------ functions
    def params(self, c: list[Any]) -> tuple[list[Var], list[tuple[Token, object]]]:
        """`(%x: T, ..., key=value, ...)`"""
        params: list[Var] = []
        attrs: list[tuple[Token, object]] = []
        for item in c[1] if len(c) > 2 else []:
            if type(item) is tuple:
                attrs.append(item)
            elif attrs:
                self.error(item.span, "parameters must come before function attributes")
            else:
                params.append(item)
        return params, attrs

    def param_items(self, c: list[Any]) -> list[Any]:
        """Parameters and function attributes."""
        if len(c) == 1:
            return [c[0]]
        c[0].append(c[2])
        return c[0]

    def param(self, c: list[Any]) -> Var:
        """`%x`, `%x: T`, `%x {virtual_device=...}: T` (braces are ignored)."""
        token = c[0]
        annotation = c[-1] if len(c) > 1 and c[-2] == ":" else None
        return Var(token[1:], annotation, span=self.token_span(token))

    def param_braces(self, c: list[Any]) -> None:
        """`{key=value, ...}` after a parameter: accepted and ignored."""
        return None

    def bind_params(self, params: list[Var]) -> None:
        """Open a scope binding the parameters."""
        self.vars.push()
        seen: set[str] = set()
        for var in params:
            if var.name_hint in seen:
                self.error(var.span, f"duplicate parameter %{var.name_hint}")
            seen.add(var.name_hint)
            self.vars.bind("%" + var.name_hint, var)

    def func_attrs(self, attrs: list[tuple[Token, object]]) -> FuncAttrs:
        """Function attributes such as `Primitive=1`, `virtual_device=meta[VirtualDevice][0]`."""
        values: dict[str, object] = {}
        for key, value in attrs:
            name = str(key)
            if name in values:
                self.error(key, f"duplicate attribute `{name}`")
            values[name] = self.meta_attr_value(value)
        return FuncAttrs(values) if values else FuncAttrs()

    def fn_head(self, c: list[Any]) -> tuple[Token, tuple[Any, ...]]:
        """`fn` or `fn [A, B]`: opens the type scope."""
        return c[0], self.bind_type_params(c[1] if len(c) > 1 else [])

    def fn_sig(self, c: list[Any]) -> tuple[Any, ...]:
        """`fn [A](params) -> R`: binds the parameters."""
        (keyword, tvars), (params, attrs) = c[0], c[1]
        self.bind_params(params)
        ret = c[3] if len(c) > 2 else None
        return keyword, tvars, params, attrs, ret

    def fn_expr(self, c: list[Any]) -> Expr:
        """`fn (params) { body }`"""
        keyword, tvars, params, attrs, ret = c[0]
        body, rbrace = c[1]
        self.vars.pop()
        self.type_vars.pop()
        return Function(
            params, body, ret, tvars, self.func_attrs(attrs), span=self.span(keyword, rbrace)
        )

    def def_head(self, c: list[Any]) -> tuple[Any, ...]:
        """`def @f[A]`: checks the name and opens the type scope."""
        token = c[1]
        name = token[1:]
        previous = self.defined.get(name)
        if previous is not None:
            self.error(token, f"duplicate definition of @{name}", f"first defined at {previous}")
        self.defined[name] = self.token_span(token)
        gv = self.global_var(token, use=False)
        return c[0], gv, self.bind_type_params(c[2] if len(c) > 2 else [])

    def def_sig(self, c: list[Any]) -> tuple[Any, ...]:
        """`def @f(params) -> R`: binds the parameters."""
        (keyword, gv, tvars), (params, attrs) = c[0], c[1]
        self.bind_params(params)
        ret = c[3] if len(c) > 2 else None
        return keyword, gv, tvars, params, attrs, ret

    def function_def(self, c: list[Any]) -> None:
        """`def @f(...) { body }`: adds the function to the module."""
        keyword, gv, tvars, params, attrs, ret = c[0]
        body, rbrace = c[1]
        self.vars.pop()
        self.type_vars.pop()
        self.functions[gv] = Function(
            params, body, ret, tvars, self.func_attrs(attrs), span=self.span(keyword, rbrace)
        )

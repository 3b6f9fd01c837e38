"""Compiling a fused module with control flow to VM bytecode (`backend.runtime.vm`).

`compile_vm(module, types, target)` takes what `driver.optimize` returns — inside each
function, tensor operators grouped into `Primitive` functions by fusion — and emits a
`VMFunction` for every global function, for every closure literal (its captured variables
become its first parameters) and for the constructors and operators used as values. Each
distinct primitive function is lowered and compiled to a native kernel as `compile_plan`
does (`lower_kernel`, `name_kernels`, `compile_kernels`); one that cannot be lowered runs
in the interpreter. A kernel's outputs are allocated by `AllocTensor` with the static
shapes of its types; the memory plan (`vm.memory`) then lets an allocation take the
storage of a tensor dead in the same basic block. A kernel whose inputs have `?` or
symbolic dimensions is compiled once for all sizes (`lower.dynamic`) and called by
`InvokeDynamicKernel`, which binds its shape variables from the input shapes and allocates
its outputs from the shapes the type relations gave in terms of them; one the relations
cannot size that way runs in the interpreter (`_Program.refused` says why).

Function bodies are in graph form: an expression node used several times is computed
once, in the innermost scope (function body, `if` branch, `match` clause) that contains
all its uses, as A-normal form would bind it. Code is emitted per scope and an `if` or a
`match` joins its scope's code once its branches are compiled, so a node a branch needs
from an enclosing scope is computed before the branch. Calls in tail position become tail
calls. The walk runs on `lang.trampoline`, without Python recursion per node.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Generator
from typing import Any

import attrs
import numpy as np

from ...lang.adt import Constructor
from ...lang.dtype import numpy_dtype
from ...lang.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    Tuple,
    TupleGetItem,
    Var,
)
from ...lang.expr import RefRead as RefReadExpr
from ...lang.expr import RefWrite as RefWriteExpr
from ...lang.freevars import free_vars
from ...lang.module import IRModule
from ...lang.op import Op
from ...lang.printer import print_expr
from ...lang.scopes import ScopeTree
from ...lang.structural import structural_equal, structural_hash
from ...lang.trampoline import run
from ...lang.traversal import post_order_by
from ...lang.types import TensorType, TupleType, Type, leaf_types
from ...typecheck.result import ModuleTypes
from ..codegen import threadpool
from ..lower.dynamic import DynamicSignature, lower_dynamic
from ..lower.lower_func import LoweredKernel, LoweringError
from ..runtime.vm import bytecode as bc
from ..runtime.vm.memory import plan_function
from ..runtime.vm.model import VMModel
from ..target import Target
from .compile_plan import check_index_range, compile_kernels, lower_kernel, name_kernels
from .graph_plan import NotCompilable
from .vm_artifact import interface_digest, save_vm_artifact

_ATOMS = (Var, GlobalVar, Op, Constructor)
"""Nodes that are never computed into a register of their own by the scope analysis."""

Step = Generator[Any, Any, Any]


class _Label:
    """A jump target inside a function's code, resolved when the code is assembled."""

    __slots__ = ("pos",)

    def __init__(self) -> None:
        self.pos = -1


def _label() -> Any:
    """A new `_Label`, typed `Any`: instructions hold it where they will hold an index."""
    return _Label()


def _is_primitive(e: Expr) -> bool:
    return isinstance(e, Function) and e.is_primitive


def _scoped_children(node: Expr) -> list[tuple[Expr, int]]:
    """The operands of `node` the function's code computes, each with 0 (evaluated in the
    node's scope) or k > 0 (evaluated in the node's k-th inner scope: an `if` branch, a
    `match` clause). Function literals are compiled on their own: no children."""
    cls = type(node)
    if cls is Call:
        out = [(a, 0) for a in node.args]  # type: ignore[attr-defined]
        op = node.op  # type: ignore[attr-defined]
        if not isinstance(op, _ATOMS) and not _is_primitive(op):
            out.insert(0, (op, 0))
        return out
    if cls is Let:
        return [(node.value, 0), (node.body, 0)]  # type: ignore[attr-defined]
    if cls is If:
        return [(node.cond, 0), (node.true_branch, 1), (node.false_branch, 2)]  # type: ignore[attr-defined]
    if cls is Match:
        clauses = node.clauses  # type: ignore[attr-defined]
        return [(node.data, 0)] + [(c.rhs, k + 1) for k, c in enumerate(clauses)]  # type: ignore[attr-defined]
    if cls is Tuple:
        return [(f, 0) for f in node.fields]  # type: ignore[attr-defined]
    if cls is TupleGetItem:
        return [(node.tuple_value, 0)]  # type: ignore[attr-defined]
    if cls is RefCreate:
        return [(node.value, 0)]  # type: ignore[attr-defined]
    if cls is RefReadExpr:
        return [(node.ref, 0)]  # type: ignore[attr-defined]
    if cls is RefWriteExpr:
        return [(node.ref, 0), (node.value, 0)]  # type: ignore[attr-defined]
    return []


class _ScopeAnalysis:
    """For each node of a body: the innermost scope holding all its uses, and its uses."""

    def __init__(self, body: Expr) -> None:
        self.tree = ScopeTree()
        self.inner: dict[tuple[int, int], int] = {}
        self.scope_of: dict[int, int] = {id(body): 0}
        self.uses: dict[int, int] = {}
        for node in reversed(_post_order(body)):  # every parent before its children
            if isinstance(node, _ATOMS):
                continue
            scope = self.scope_of[id(node)]
            for child, k in _scoped_children(node):
                s = scope if k == 0 else self._inner(node, k, scope)
                if isinstance(child, _ATOMS):
                    continue
                self.uses[id(child)] = self.uses.get(id(child), 0) + 1
                old = self.scope_of.get(id(child))
                self.scope_of[id(child)] = s if old is None else self.tree.lca(old, s)

    def _inner(self, node: Expr, k: int, parent: int) -> int:
        key = (id(node), k)
        scope = self.inner.get(key)
        if scope is None:
            scope = self.inner[key] = self.tree.new(parent)
        return scope


def _post_order(root: Expr) -> list[Expr]:
    """The nodes `_scoped_children` reaches from `root`, each once, children first."""
    return post_order_by(root, lambda node: [c for c, _ in _scoped_children(node)])


def _is_dynamic(ty: Type) -> bool:
    return isinstance(ty, TensorType) and not all(isinstance(d, int) for d in ty.shape)


@attrs.define
class _Kernel:
    fn: Function
    lowered: LoweredKernel | None
    dynamic: DynamicSignature | None = None


class _Program:
    """The program being built: functions (compiled from a work list), kernels,
    constants."""

    def __init__(self, module: IRModule, types: ModuleTypes, target: Target) -> None:
        self.module = module
        self.types = types
        self.target = target
        self.functions: list[bc.VMFunction | None] = []
        self.work: list[tuple[int, Function, list[Var], str]] = []
        self.globals: dict[str, int] = {}
        for gv, fn in module.functions.items():
            self.globals[gv.name_hint] = self._reserve(fn, [], gv.name_hint)
        self.literals: dict[int, tuple[int, list[Var]]] = {}
        self.wrappers: dict[Any, int] = {}
        self.kernels: list[_Kernel] = []
        self._kernel_index: dict[int, list[int]] = {}
        self.constants: list[Any] = []
        self._constant_index: dict[int, int] = {}
        self.refused: list[str] = []  # why dynamic kernels run in the interpreter

    def _reserve(self, fn: Function | None, captured: list[Var], name: str) -> int:
        index = len(self.functions)
        self.functions.append(None)
        if fn is not None:
            self.work.append((index, fn, captured, name))
        return index

    def global_function(self, gv: GlobalVar) -> int:
        """The function index of global `gv`."""
        index = self.globals.get(gv.name_hint)
        if index is None:
            raise NotCompilable(f"the program calls @{gv.name_hint}, which the module lacks")
        return index

    def literal(self, fn: Function) -> tuple[int, list[Var]]:
        """The function index of closure literal `fn` and the variables it captures."""
        found = self.literals.get(id(fn))
        if found is None:
            captured = free_vars(fn)
            found = (self._reserve(fn, captured, f"closure{len(self.literals)}"), captured)
            self.literals[id(fn)] = found
        return found

    def wrapper(self, callee: Op | Constructor, arity: int) -> int:
        """A function calling operator or constructor `callee` on its `arity` arguments
        (what the value `callee` is when it is not called directly)."""
        index = self.wrappers.get(callee)
        if index is None:
            index = self._reserve(None, [], f"wrap_{getattr(callee, 'name', None) or callee}")
            args = tuple(range(arity))
            made: bc.Instruction
            if isinstance(callee, Constructor):
                made = bc.AllocADT(arity, callee, args)
            else:
                made = bc.InvokeOp(arity, callee, None, args)
            self.functions[index] = bc.VMFunction(
                f"wrap_{index}", arity, arity + 1, (made, bc.Ret(arity))
            )
            self.wrappers[callee] = index
        return index

    def constant(self, node: Constant) -> int:
        """The index of `node`'s array in the program's constants."""
        index = self._constant_index.get(id(node))
        if index is None:
            index = self._constant_index[id(node)] = len(self.constants)
            self.constants.append(node.data)
        return index

    def kernel(self, fn: Function) -> int:
        """The index of the kernel of primitive function `fn` (lowered on first sight;
        structurally equal functions share one)."""
        h = structural_hash(fn)
        for k in self._kernel_index.get(h, []):
            if structural_equal(self.kernels[k].fn, fn):
                return k
        k = len(self.kernels)
        param_types = [self.param_type(p) for p in fn.params]
        if any(_is_dynamic(t) for ty in param_types for t in leaf_types(ty)):
            self._kernel_index.setdefault(h, []).append(k)
            self.kernels.append(self._dynamic_kernel(fn, param_types, k))
            return k
        if any(_is_dynamic(t) for t in leaf_types(self.result_type(fn))):
            # static inputs, a dynamic result: only the interpreter knows its size
            self._kernel_index.setdefault(h, []).append(k)
            self.kernels.append(_Kernel(fn, None))
            return k
        lowered = lower_kernel(fn, self.types, k, self.target)
        if lowered is not None and len(lowered.param_types) != sum(
            len(leaf_types(self.param_type(p))) for p in fn.params
        ):
            lowered = None
        self._kernel_index.setdefault(h, []).append(k)
        self.kernels.append(_Kernel(fn, lowered))
        return k

    def _dynamic_kernel(self, fn: Function, param_types: list[Type], k: int) -> _Kernel:
        """Kernel `k` of `fn`, whose inputs have `?` or symbolic dimensions: compiled once
        for all sizes (`lower.dynamic`), or interpreted when it cannot be."""
        check_index_range(fn, self.types)
        try:
            made = lower_dynamic(fn, param_types, f"k{k}", self.target)
        except LoweringError as exc:
            self.refused.append(str(exc).splitlines()[0])
            return _Kernel(fn, None)
        return _Kernel(fn, made.lowered, made.signature)

    def param_type(self, p: Var) -> Type:
        """The type of a primitive function's parameter."""
        if p in self.types:
            return self.types.type_of(p)
        if p.type_annotation is None:
            raise NotCompilable(f"no type for the kernel parameter %{p.name_hint}")
        return p.type_annotation

    def result_type(self, fn: Function) -> Type:
        """The type of a primitive function's result."""
        if fn.body in self.types:
            return self.types.type_of(fn.body)
        if fn.ret_type is None:
            raise NotCompilable("no type for a kernel's result")
        return fn.ret_type

    def compile_all(self) -> None:
        """Compile every function on the work list (closures found on the way join it)."""
        while self.work:
            index, fn, captured, name = self.work.pop()
            self.functions[index] = _FunctionCompiler(self, fn, captured, name).compile()


class _FunctionCompiler:
    """Emits the code of one function (see the module docstring)."""

    def __init__(self, program: _Program, fn: Function, captured: list[Var], name: str) -> None:
        self.program = program
        self.fn = fn
        self.name = name
        self.registers = 0
        self.env: dict[Var, int] = {}
        self.log: list[tuple[Var, int | None]] = []
        self.arity = len(captured) + len(fn.params)
        for v in [*captured, *fn.params]:
            self.bind(v, self.new())
        self.scopes = _ScopeAnalysis(fn.body)
        self.memo: dict[int, int] = {}
        self.buffers: dict[int, list[Any]] = {}
        self.fields: dict[int, tuple[int, ...]] = {}  # register of a tuple made here → fields

    # ------------------------------------------------------------------ helpers
    def new(self) -> int:
        """A fresh register."""
        self.registers += 1
        return self.registers - 1

    def bind(self, var: Var, reg: int) -> None:
        """`var` is in `reg` (until `unbind_to` undoes it)."""
        self.log.append((var, self.env.get(var)))
        self.env[var] = reg

    def unbind_to(self, mark: int) -> None:
        """Undo the bindings made since the log had `mark` entries."""
        while len(self.log) > mark:
            var, old = self.log.pop()
            if old is None:
                del self.env[var]
            else:
                self.env[var] = old

    def compile(self) -> bc.VMFunction:
        """The function's code, assembled."""
        items: list[Any] = []
        self.buffers[0] = items
        run(self.tail(self.fn.body, 0))
        return bc.VMFunction(self.name, self.arity, max(1, self.registers), _assemble(items))

    def block(self, expr: Expr, scope: int, tail: bool) -> Step:
        """(the code of scope `scope` computing `expr`, its register or None in tail
        position)."""
        mark = len(self.log)
        items: list[Any] = []
        self.buffers[scope] = items
        reg = None
        if tail:
            yield self.tail(expr, scope)
        else:
            reg = yield self.value(expr, scope)
        del self.buffers[scope]
        self.unbind_to(mark)
        return items, reg

    # ------------------------------------------------------------------ values
    def value(self, node: Expr, scope: int) -> Step:
        """The register holding `node`'s value, after emitting the code computing it."""
        cls = type(node)
        if cls is Var:
            reg = self.env.get(node)  # type: ignore[call-overload]
            if reg is None:
                raise NotCompilable(f"%{node.name_hint} is used where it is not bound")  # type: ignore[attr-defined]
            return reg
        if cls is GlobalVar or cls is Op or cls is Constructor:
            return self.function_value(node, self.buffers[scope])
        done = self.memo.get(id(node))
        if done is not None:
            return done
        s = self.scopes.scope_of.get(id(node), scope)
        out = self.buffers[s]
        if cls is Let:
            return (yield self.let_chain(node, s))  # type: ignore[arg-type]
        if cls is Constant:
            reg = self.new()
            out.append(bc.LoadConst(reg, self.program.constant(node)))  # type: ignore[arg-type]
        elif cls is Call:
            reg = yield self.call(node, s, False)  # type: ignore[arg-type]
        elif cls is Tuple:
            fields = []
            for f in node.fields:  # type: ignore[attr-defined]
                fields.append((yield self.value(f, s)))
            reg = self.tuple(tuple(fields), out)
        elif cls is TupleGetItem:
            t = yield self.value(node.tuple_value, s)  # type: ignore[attr-defined]
            reg = self.field(t, node.index, out)  # type: ignore[attr-defined]
        elif cls is If:
            reg = yield self.if_(node, s, False)  # type: ignore[arg-type]
        elif cls is Match:
            reg = yield self.match(node, s, False)  # type: ignore[arg-type]
        elif cls is Function:
            reg = self.closure(node, s, None)  # type: ignore[arg-type]
        elif cls is RefCreate:
            v = yield self.value(node.value, s)  # type: ignore[attr-defined]
            reg = self.new()
            out.append(bc.RefNew(reg, v))
        elif cls is RefReadExpr:
            r = yield self.value(node.ref, s)  # type: ignore[attr-defined]
            reg = self.new()
            out.append(bc.RefRead(reg, r))
        elif cls is RefWriteExpr:
            r = yield self.value(node.ref, s)  # type: ignore[attr-defined]
            v = yield self.value(node.value, s)  # type: ignore[attr-defined]
            reg = self.new()
            out.append(bc.RefWrite(reg, r, v))
        else:
            raise NotCompilable(f"the VM cannot compile a `{cls.__name__}`")
        self.memo[id(node)] = reg
        return reg

    def function_value(self, node: Expr, out: list[Any]) -> int:
        """A global, operator or constructor used as a value: a closure of it."""
        reg = self.new()
        if isinstance(node, GlobalVar):
            out.append(bc.AllocClosure(reg, self.program.global_function(node), ()))
            return reg
        if isinstance(node, Constructor):
            arity = len(node.inputs)
        else:
            arity = node.num_inputs  # type: ignore[attr-defined]
            if arity < 0:
                raise NotCompilable(f"the variadic operator `{node.name}` is used as a value")  # type: ignore[attr-defined]
        out.append(bc.AllocClosure(reg, self.program.wrapper(node, arity), ()))  # type: ignore[arg-type]
        return reg

    def let_chain(self, node: Let, s: int) -> Step:
        """Bind the values of a chain of lets, then compute its body."""
        chain: list[Let] = []
        current: Expr = node
        while type(current) is Let and id(current) not in self.memo:
            chain.append(current)  # type: ignore[arg-type]
            yield self.bind_let(current, s)  # type: ignore[arg-type]
            current = current.body  # type: ignore[attr-defined]
        reg = yield self.value(current, s)
        for let in chain:
            self.memo[id(let)] = reg
        return reg

    def bind_let(self, let: Let, s: int) -> Step:
        """Compute a let's value (a closure that captures its own variable knows itself)
        and bind its variable."""
        value = let.value
        if isinstance(value, Function) and not value.is_primitive and id(value) not in self.memo:
            reg = self.closure(value, self.scopes.scope_of.get(id(value), s), let.var)
            self.memo[id(value)] = reg
        else:
            reg = yield self.value(value, s)
        self.bind(let.var, reg)

    def closure(self, fn: Function, s: int, itself: Var | None) -> int:
        """Allocate a closure of literal `fn`; `itself`, when it is captured, is the
        closure's own value."""
        index, captured = self.program.literal(fn)
        regs = []
        self_index = -1
        for k, v in enumerate(captured):
            if v is itself:
                self_index = k
                regs.append(self.new())
                continue
            reg = self.env.get(v)
            if reg is None:
                raise NotCompilable(f"a closure captures %{v.name_hint}, which is not bound")
            regs.append(reg)
        reg = self.new()
        self.buffers[s].append(bc.AllocClosure(reg, index, tuple(regs), self_index))
        return reg

    # ------------------------------------------------------------------ calls
    def call(self, node: Call, s: int, tail: bool) -> Step:
        """Emit a call; its register (None for a tail call, which returns)."""
        out = self.buffers[s]
        op = node.op
        if _is_primitive(op):
            return (yield self.kernel_call(node, s))
        callee = None
        if not isinstance(op, _ATOMS):
            callee = yield self.value(op, s)
        args = []
        for a in node.args:
            args.append((yield self.value(a, s)))
        args_t = tuple(args)
        if isinstance(op, GlobalVar):
            func = self.program.global_function(op)
            if tail:
                out.append(bc.TailInvoke(func, args_t))
                return None
            reg = self.new()
            out.append(bc.Invoke(reg, func, args_t))
            return reg
        if isinstance(op, Constructor):
            reg = self.new()
            out.append(bc.AllocADT(reg, op, args_t))
            return reg
        if isinstance(op, Op):
            reg = self.new()
            out.append(bc.InvokeOp(reg, op, node.attrs, args_t, node.span))
            return reg
        if callee is None:  # a variable
            callee = yield self.value(op, s)
        if tail:
            out.append(bc.TailInvokeClosure(callee, args_t, node.span))
            return None
        reg = self.new()
        out.append(bc.InvokeClosure(reg, callee, args_t, node.span))
        return reg

    def kernel_call(self, node: Call, s: int) -> Step:
        """Emit the call of a primitive function: its inputs' tensors, its outputs'
        allocation and the native call (or the interpreter's, without native code)."""
        program = self.program
        fn: Function = node.op  # type: ignore[assignment]
        k = program.kernel(fn)
        args = []
        for a in node.args:
            args.append((yield self.value(a, s)))
        out = self.buffers[s]
        lowered = program.kernels[k].lowered
        if lowered is None:
            reg = self.new()
            out.append(bc.InvokeFallback(reg, k, tuple(args)))
            return reg
        inputs: list[int] = []
        for p, reg in zip(fn.params, args):
            inputs.extend(self.leaves(reg, program.param_type(p), out))
        if program.kernels[k].dynamic is not None:
            outputs = [self.new() for _ in lowered.output_types]
            out.append(bc.InvokeDynamicKernel(k, tuple(args), tuple(inputs), tuple(outputs)))
            return self.rebuild(program.result_type(fn), iter(outputs), out)
        outputs = []
        for t in lowered.output_types:
            reg = self.new()
            shape = tuple(int(d) for d in t.shape)  # type: ignore[arg-type]
            out.append(bc.AllocTensor(reg, shape, numpy_dtype(t.dtype)))
            outputs.append(reg)
        out.append(bc.InvokeKernel(k, tuple(inputs), tuple(outputs)))
        return self.rebuild(program.result_type(fn), iter(outputs), out)

    def leaves(self, reg: int, ty: Type, out: list[Any]) -> list[int]:
        """Registers holding the tensors of the (nested tuple) value in `reg` of type `ty`,
        depth first."""
        if not isinstance(ty, TupleType):
            return [reg]
        found: list[int] = []
        stack: list[tuple[int, Type]] = [(reg, ty)]
        while stack:
            r, t = stack.pop()
            if not isinstance(t, TupleType):
                found.append(r)
                continue
            parts = [(self.field(r, i, out), f) for i, f in enumerate(t.fields)]
            stack.extend(reversed(parts))
        return found

    def tuple(self, fields: tuple[int, ...], out: list[Any]) -> int:
        """A register holding the tuple of the registers `fields`."""
        reg = self.new()
        out.append(bc.AllocTuple(reg, fields))
        self.fields[reg] = fields
        return reg

    def field(self, reg: int, index: int, out: list[Any]) -> int:
        """A register holding field `index` of the tuple in `reg` (the field's own
        register when this function made the tuple: registers are written once)."""
        known = self.fields.get(reg)
        if known is not None:
            return known[index]
        found = self.new()
        out.append(bc.GetField(found, reg, index))
        return found

    def rebuild(self, ty: Type, regs: Any, out: list[Any]) -> int:
        """A register holding the tensors from `regs` shaped like the (nested tuple) type
        `ty` (recursion bounded by the type's nesting)."""
        if not isinstance(ty, TupleType):
            return int(next(regs))
        return self.tuple(tuple(self.rebuild(f, regs, out) for f in ty.fields), out)

    # ------------------------------------------------------------------ control flow
    def if_(self, node: If, s: int, tail: bool) -> Step:
        """Emit an `if`; its register (None in tail position: each branch returns)."""
        cond = yield self.value(node.cond, s)
        inner = self.scopes.inner
        then, r1 = yield self.block(node.true_branch, inner[(id(node), 1)], tail)
        other, r2 = yield self.block(node.false_branch, inner[(id(node), 2)], tail)
        otherwise = _label()
        out = self.buffers[s]
        if tail:
            out.extend([bc.JumpIfFalse(cond, otherwise), *then, otherwise, *other])  # type: ignore[arg-type]
            return None
        end = _label()
        reg = self.new()
        out.extend([bc.JumpIfFalse(cond, otherwise), *then, bc.Move(reg, r1), bc.Goto(end)])  # type: ignore[arg-type]
        out.extend([otherwise, *other, bc.Move(reg, r2), end])
        return reg

    def match(self, node: Match, s: int, tail: bool) -> Step:
        """Emit a `match`: a jump table on the constructor tag when clauses start with
        constructors, then each clause's tests in order; its register (None in tail
        position)."""
        data = yield self.value(node.data, s)
        clauses = node.clauses
        tests = [_label() for _ in clauses]
        heads = [_label() for _ in clauses]
        fail, end = _label(), _label()
        items: list[Any] = []
        if sum(isinstance(c.lhs, PatternConstructor) for c in clauses) >= 2:
            tag = self.new()
            table: dict[int, _Label] = {}
            default: _Label = fail
            for i, clause in enumerate(clauses):
                lhs = clause.lhs
                if isinstance(lhs, PatternConstructor):
                    table.setdefault(lhs.constructor.tag, heads[i])
                elif default is fail:
                    default = heads[i]
                    break  # this clause matches every tag left
            items += [bc.GetTag(tag, data), bc.Switch(tag, tuple(table.items()), default)]  # type: ignore[arg-type]
        reg = None if tail else self.new()
        for i, clause in enumerate(clauses):
            mark = len(self.log)
            items.append(tests[i])
            next_test = tests[i + 1] if i + 1 < len(clauses) else fail
            items.extend(self.pattern(clause.lhs, data, next_test, heads[i]))
            body, r = yield self.block(clause.rhs, self.scopes.inner[(id(node), i + 1)], tail)
            items.extend(body)
            if not tail:
                items += [bc.Move(reg, r), bc.Goto(end)]  # type: ignore[arg-type]
            self.unbind_to(mark)
        items += [fail, bc.Fail("no clause of the match matched the value", node.span)]
        if not tail:
            items.append(end)
        self.buffers[s].extend(items)
        return reg

    def pattern(self, pattern: Pattern, reg: int, fail: Any, head: Any) -> list[Any]:
        """The tests of `pattern` against the value in `reg` (jumping to `fail` when it
        does not match), binding its variables; `head` is placed after the outermost
        constructor's tag test (where the jump table lands)."""
        items: list[Any] = []
        placed = False
        stack: list[tuple[Pattern, int, bool]] = [(pattern, reg, True)]
        while stack:
            p, r, outermost = stack.pop()
            if isinstance(p, PatternVar):
                self.bind(p.var, r)
            elif isinstance(p, PatternConstructor):
                tag = self.new()
                items += [bc.GetTag(tag, r), bc.JumpIfTagNot(tag, p.constructor.tag, fail)]
                if outermost:
                    items.append(head)
                    placed = True
                parts = []
                for j, sub in enumerate(p.patterns):
                    if isinstance(sub, PatternWildcard):
                        continue
                    f = self.new()
                    items.append(bc.GetADTField(f, r, j))
                    parts.append((sub, f, False))
                stack.extend(reversed(parts))
            elif isinstance(p, PatternTuple):
                parts = []
                for j, sub in enumerate(p.patterns):
                    if isinstance(sub, PatternWildcard):
                        continue
                    parts.append((sub, self.field(r, j, items), False))
                stack.extend(reversed(parts))
        if not placed:
            items.insert(0, head)
        return items

    # ------------------------------------------------------------------ tail position
    def tail(self, node: Expr, scope: int) -> Step:
        """Emit code returning `node`'s value from the function."""
        while True:
            single = (
                id(node) not in self.memo
                and self.scopes.uses.get(id(node), 0) <= 1
                and self.scopes.scope_of.get(id(node), scope) == scope
            )
            cls = type(node)
            if single and cls is Let:
                yield self.bind_let(node, scope)  # type: ignore[arg-type]
                node = node.body  # type: ignore[attr-defined]
                continue
            if single and cls is If:
                yield self.if_(node, scope, True)  # type: ignore[arg-type]
                return None
            if single and cls is Match:
                yield self.match(node, scope, True)  # type: ignore[arg-type]
                return None
            if (
                single
                and cls is Call
                and not _is_primitive(node.op)  # type: ignore[attr-defined]
                and not isinstance(node.op, (Op, Constructor))  # type: ignore[attr-defined]
            ):
                yield self.call(node, scope, True)  # type: ignore[arg-type]
                return None
            reg = yield self.value(node, scope)
            self.buffers[scope].append(bc.Ret(reg))
            return None


def _assemble(items: list[Any]) -> tuple[bc.Instruction, ...]:
    """The instructions of `items` with labels resolved to instruction indices."""
    pos = 0
    for item in items:
        if isinstance(item, _Label):
            item.pos = pos
        else:
            pos += 1
    code = []
    for item in items:
        if isinstance(item, _Label):
            continue
        if isinstance(item, (bc.Goto, bc.JumpIfFalse, bc.JumpIfTagNot)):
            item = attrs.evolve(item, target=item.target.pos)  # type: ignore[attr-defined]
        elif isinstance(item, bc.Switch):
            table = tuple((tag, label.pos) for tag, label in item.table)  # type: ignore[attr-defined]
            item = bc.Switch(item.tag, table, item.default.pos)  # type: ignore[attr-defined]
        code.append(item)
    return tuple(code)


def compile_vm(
    module: IRModule,
    types: ModuleTypes,
    target: Target,
    reason: str = "",
    name: str = "vm",
    dump: dict[str, Any] | None = None,
) -> VMModel:
    """A `VMModel` running `module` (fused and typed; `types` its types) with native
    kernels for `target`; `reason` says why the static executor could not run it.
    `NotCompilable` when the VM cannot run it either."""
    if target.kind != "llvm":
        raise NotCompilable(f"the VM runs native kernels for an llvm target, not `{target}`")
    if "main" not in module:
        raise NotCompilable("the module has no @main")
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    program = _Program(module, types, target)
    program.compile_all()
    seconds["vm-compile"] = time.perf_counter() - start
    kernels = [k.fn for k in program.kernels]
    lowered = {k: kernel.lowered for k, kernel in enumerate(program.kernels) if kernel.lowered}
    dynamic = {k: kernel.dynamic for k, kernel in enumerate(program.kernels) if kernel.dynamic}
    digest = hashlib.sha256("\n".join(print_expr(fn) for fn in kernels).encode()).hexdigest()
    interface = _interface_digest(lowered, dynamic)
    params: list[np.ndarray] = []
    prefix = f"{name}_{digest[:12]}_{interface}"
    infos, scheduled = name_kernels(kernels, lowered, prefix, params)
    library = None
    if scheduled:
        library = compile_kernels(scheduled, None, name, target, seconds, dump)
    threadpool.apply_target(target)
    vm_kernels = []
    for k, info in enumerate(infos):
        low = program.kernels[k].lowered
        signature = program.kernels[k].dynamic
        if signature is not None:
            layout = _dynamic_layout(signature, program.kernels[k].fn)
            vm_kernels.append(bc.VMKernel(info.name, info.lifted, (), None, layout))
            continue
        inputs = tuple(
            (tuple(int(d) for d in t.shape), numpy_dtype(t.dtype))  # type: ignore[arg-type]
            for t in (low.param_types if low is not None and info.fallback is None else ())
        )
        vm_kernels.append(bc.VMKernel(info.name, info.lifted, inputs, info.fallback))
    functions = [plan_function(f) for f in program.functions if f is not None]
    assert len(functions) == len(program.functions)
    made = bc.VMProgram(functions, program.globals["main"], program.constants, vm_kernels, params)
    if dump is not None:
        dump["relay"] = module.astext()
        dump["vm"] = made.astext()
    return VMModel(
        made,
        library,
        module["main"],
        target,
        reason,
        seconds,
        type_definitions=dict(module.type_definitions),
        saver=save_vm_artifact,
    )


def _dynamic_layout(signature: DynamicSignature, fn: Function) -> bc.DynamicLayout:
    """The VM's form of a dynamic kernel's signature (numpy dtypes)."""

    def layouts(items: Any) -> tuple[Any, ...]:
        return tuple((dims, numpy_dtype(dtype)) for dims, dtype in items)

    return bc.DynamicLayout(
        layouts(signature.inputs), layouts(signature.outputs), signature.variables, fn
    )


def _interface_digest(
    lowered: dict[int, LoweredKernel], dynamic: dict[int, DynamicSignature] | None = None
) -> str:
    """The digest of the native kernels' layouts that their symbols carry (what a saved
    VM artifact's loader recomputes from the bytecode: `vm_artifact.interface_digest`).
    A dynamic kernel's dimensions are its `DynamicSignature` codes (negative: variables)."""
    dynamic = dynamic or {}

    def layouts(types: Any) -> tuple[Any, ...]:
        return tuple((tuple(int(d) for d in t.shape), numpy_dtype(t.dtype)) for t in types)

    def inputs(k: int) -> tuple[Any, ...]:
        if k in dynamic:
            return tuple((d, numpy_dtype(t)) for d, t in dynamic[k].inputs)
        return layouts(lowered[k].param_types)

    def outputs(k: int) -> tuple[Any, ...]:
        if k in dynamic:
            return tuple((d, numpy_dtype(t)) for d, t in dynamic[k].outputs)
        return layouts(lowered[k].output_types)

    order = sorted(lowered)
    return interface_digest(
        [inputs(k) for k in order],
        [outputs(k) for k in order],
        [tuple((np.shape(c), np.asarray(c).dtype) for c in lowered[k].constants) for k in order],
    )


__all__ = ["compile_vm"]

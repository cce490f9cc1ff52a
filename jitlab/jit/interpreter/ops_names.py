"""Handlers for globals, attributes, subscripts, closures and cells that are the same in 3.11-3.13,
and the helpers the version modules share (LOAD_GLOBAL and LOAD_ATTR differ in where they put NULL:
see py311.py, py312.py and py313.py)."""

from __future__ import annotations

import types

from jitlab.jit.interpreter.registry import handler

EMPTY = object()  # no value: a missing class attribute, or what `del` of a cell stores (`Hooks.store_cell`)


@handler("STORE_GLOBAL")
def STORE_GLOBAL(interp, frame, instr):
    interp.hooks.store_global(frame.globals, instr.argval, frame.stack.pop())


@handler("DELETE_GLOBAL")
def DELETE_GLOBAL(interp, frame, instr):
    interp.hooks.delete_global(frame.globals, instr.argval)


def _class_attribute(obj, name):
    for klass in type(obj).__mro__:
        value = klass.__dict__.get(name, EMPTY)
        if value is not EMPTY:
            return value
    return EMPTY


def load_attribute(interp, obj, name):
    """getattr(obj, name), stepping into user-written property getters. Not when the class's own
    `__getattribute__` is Python code the interpreter steps into (a transformers config's, which maps
    names through `attribute_map` first): CPython calls that method, which may never reach the
    property; the hooks' `load_attr` runs it, and the property when it gets there."""
    static = _class_attribute(obj, name)
    if type(static) is property and type(static.fget) is types.FunctionType and not isinstance(obj, type):
        getattribute = _class_attribute(obj, "__getattribute__")
        if type(getattribute) is types.FunctionType and interp.hooks.step_into(getattribute):
            return interp.hooks.load_attr(obj, name)
        if interp.hooks.step_into(static.fget):
            interp.hooks.class_lookup(type(obj), name)
            return interp.call(static.fget, (obj,), {})
    return interp.hooks.load_attr(obj, name)


@handler("STORE_ATTR")
def STORE_ATTR(interp, frame, instr):
    obj = frame.stack.pop()
    value = frame.stack.pop()
    static = _class_attribute(obj, instr.argval)
    if (
        type(static) is property
        and type(static.fset) is types.FunctionType
        and interp.hooks.step_into(static.fset)
    ):
        interp.hooks.class_lookup(type(obj), instr.argval)
        interp.call(static.fset, (obj, value), {})
        return
    interp.hooks.store_attr(obj, instr.argval, value)


@handler("DELETE_ATTR")
def DELETE_ATTR(interp, frame, instr):
    interp.hooks.delete_attr(frame.stack.pop(), instr.argval)


def load_subscript(interp, container, key):
    """container[key], stepping into a user-written __getitem__."""
    getitem = getattr(type(container), "__getitem__", None)
    if type(getitem) is types.FunctionType and interp.hooks.step_into(getitem):
        interp.hooks.class_lookup(type(container), "__getitem__")
        return interp.call(getitem, (container, key), {})
    return interp.hooks.load_item(container, key)


@handler("BINARY_SUBSCR")
def BINARY_SUBSCR(interp, frame, instr):
    key = frame.stack.pop()
    container = frame.stack.pop()
    frame.stack.append(load_subscript(interp, container, key))


@handler("STORE_SUBSCR")
def STORE_SUBSCR(interp, frame, instr):
    key = frame.stack.pop()
    container = frame.stack.pop()
    value = frame.stack.pop()
    interp.hooks.store_item(container, key, value)


@handler("DELETE_SUBSCR")
def DELETE_SUBSCR(interp, frame, instr):
    key = frame.stack.pop()
    container = frame.stack.pop()
    interp.hooks.delete_item(container, key)


# ---------------------------------------------------------------- cells
@handler("MAKE_CELL")
def MAKE_CELL(interp, frame, instr):
    name = instr.argval
    if name in frame.locals:
        frame.locals[name] = interp.hooks.fresh(types.CellType(frame.locals[name]))
    else:
        frame.locals[name] = interp.hooks.fresh(types.CellType())


@handler("COPY_FREE_VARS")
def COPY_FREE_VARS(interp, frame, instr):
    closure = frame.func.__closure__ or ()
    for name, cell in zip(frame.code.co_freevars, closure):
        frame.locals[name] = cell


def _unbound_cell(frame, name):
    """CPython's error for an empty cell: NameError for a free variable, UnboundLocalError otherwise."""
    if name in frame.code.co_freevars:
        return NameError(
            f"cannot access free variable '{name}' where it is not associated with a value in enclosing scope"
        )
    return UnboundLocalError(f"cannot access local variable '{name}' where it is not associated with a value")


def cell_value(interp, frame, name):
    cell = frame.locals[name]
    own = name in frame.code.co_cellvars or interp.hooks.is_fresh(cell)
    try:
        if own:
            return cell.cell_contents
        return interp.hooks.load_cell(cell, False)
    except ValueError:
        raise _unbound_cell(frame, name) from None


@handler("LOAD_DEREF")
def LOAD_DEREF(interp, frame, instr):
    frame.stack.append(cell_value(interp, frame, instr.argval))


@handler("STORE_DEREF")
def STORE_DEREF(interp, frame, instr):
    cell = frame.locals[instr.argval]
    value = frame.stack.pop()
    if instr.argval in frame.code.co_cellvars or interp.hooks.is_fresh(cell):
        cell.cell_contents = value
    else:
        interp.hooks.store_cell(cell, value)


@handler("DELETE_DEREF")
def DELETE_DEREF(interp, frame, instr):
    cell = frame.locals[instr.argval]
    if not (instr.argval in frame.code.co_cellvars or interp.hooks.is_fresh(cell)):
        interp.hooks.store_cell(cell, EMPTY)  # recorded as an effect by the tracer
    try:
        del cell.cell_contents
    except ValueError:
        raise _unbound_cell(frame, instr.argval) from None


# ---------------------------------------------------------------- imports
@handler("IMPORT_NAME")
def IMPORT_NAME(interp, frame, instr):
    fromlist = frame.stack.pop()
    level = frame.stack.pop()
    frame.stack.append(__import__(instr.argval, frame.globals, None, fromlist, level))


@handler("IMPORT_FROM")
def IMPORT_FROM(interp, frame, instr):
    module = frame.stack[-1]
    name = instr.argval
    try:
        frame.stack.append(getattr(module, name))
    except AttributeError:
        import sys

        full = f"{getattr(module, '__name__', '')}.{name}"
        if full in sys.modules:
            frame.stack.append(sys.modules[full])
        else:
            raise ImportError(
                f"cannot import name '{name}' from '{getattr(module, '__name__', '?')}'"
            ) from None

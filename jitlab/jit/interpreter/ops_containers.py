"""Handlers that build, extend and unpack tuples, lists, sets, dicts, slices and strings (the same in
3.11-3.13; 3.11's LIST_TO_TUPLE became an intrinsic in 3.12, see py311.py and py312.py)."""

from __future__ import annotations

from jitlab.jit.interpreter.registry import handler


@handler("BUILD_TUPLE")
def BUILD_TUPLE(interp, frame, instr):
    frame.stack.append(tuple(frame.popn(instr.arg)))


@handler("BUILD_LIST")
def BUILD_LIST(interp, frame, instr):
    frame.stack.append(interp.hooks.fresh(frame.popn(instr.arg)))


@handler("BUILD_SET")
def BUILD_SET(interp, frame, instr):
    frame.stack.append(interp.hooks.fresh(set(map(interp.hooks.hashed, frame.popn(instr.arg)))))


@handler("BUILD_MAP")
def BUILD_MAP(interp, frame, instr):
    items = frame.popn(2 * instr.arg)
    frame.stack.append(interp.hooks.fresh(dict(zip(map(interp.hooks.hashed, items[::2]), items[1::2]))))


@handler("BUILD_CONST_KEY_MAP")
def BUILD_CONST_KEY_MAP(interp, frame, instr):
    keys = frame.stack.pop()
    values = frame.popn(instr.arg)
    frame.stack.append(interp.hooks.fresh(dict(zip(keys, values))))


@handler("BUILD_STRING")
def BUILD_STRING(interp, frame, instr):
    frame.stack.append(interp.hooks.build_string(frame.popn(instr.arg)))


@handler("BUILD_SLICE")
def BUILD_SLICE(interp, frame, instr):
    frame.stack.append(slice(*frame.popn(instr.arg)))


@handler("LIST_APPEND")
def LIST_APPEND(interp, frame, instr):
    value = frame.stack.pop()
    frame.stack[-instr.arg].append(value)


@handler("SET_ADD")
def SET_ADD(interp, frame, instr):
    value = frame.stack.pop()
    frame.stack[-instr.arg].add(interp.hooks.hashed(value))


@handler("MAP_ADD")
def MAP_ADD(interp, frame, instr):
    value = frame.stack.pop()
    key = frame.stack.pop()
    frame.stack[-instr.arg][interp.hooks.hashed(key)] = value


@handler("LIST_EXTEND")
def LIST_EXTEND(interp, frame, instr):
    seq = frame.stack.pop()
    interp.hooks.call_native(list.extend, (frame.stack[-instr.arg], seq), {})


@handler("SET_UPDATE")
def SET_UPDATE(interp, frame, instr):
    seq = frame.stack.pop()
    interp.hooks.call_native(set.update, (frame.stack[-instr.arg], seq), {})


@handler("DICT_UPDATE")
def DICT_UPDATE(interp, frame, instr):
    other = frame.stack.pop()
    interp.hooks.call_native(dict.update, (frame.stack[-instr.arg], other), {})


@handler("DICT_MERGE")
def DICT_MERGE(interp, frame, instr):
    other = frame.stack.pop()
    target = frame.stack[-instr.arg]
    keys = interp.hooks.call_native(list, (other,), {})
    for key in keys:
        if key in target:
            raise TypeError(f"got multiple values for keyword argument '{key}'")
    interp.hooks.call_native(dict.update, (target, other), {})


def _items(interp, seq, expected):
    if type(seq) in (tuple, list):
        n = interp.hooks.length(seq)
        if n != expected:
            if n > expected:
                raise ValueError(f"too many values to unpack (expected {expected})")
            raise ValueError(f"not enough values to unpack (expected {expected}, got {n})")
        return [interp.hooks.load_item(seq, i) for i in range(n)]
    return interp.hooks.call_native(list, (seq,), {})


@handler("UNPACK_SEQUENCE")
def UNPACK_SEQUENCE(interp, frame, instr):
    seq = frame.stack.pop()
    items = _items(interp, seq, instr.arg)
    if len(items) != instr.arg:
        if len(items) > instr.arg:
            raise ValueError(f"too many values to unpack (expected {instr.arg})")
        raise ValueError(f"not enough values to unpack (expected {instr.arg}, got {len(items)})")
    frame.stack.extend(reversed(items))


@handler("UNPACK_EX")
def UNPACK_EX(interp, frame, instr):
    before, after = instr.arg & 0xFF, instr.arg >> 8
    items = interp.hooks.call_native(list, (frame.stack.pop(),), {})
    if len(items) < before + after:
        raise ValueError(
            f"not enough values to unpack (expected at least {before + after}, got {len(items)})"
        )
    middle = interp.hooks.fresh(items[before : len(items) - after])
    out = [*items[:before], middle, *items[len(items) - after :]]
    frame.stack.extend(reversed(out))

# -*- test-case-name: rocketmq_tx.filter.test.test_filter -*-
"""
The expression tree of Java's ``filter/expression`` package, and its compilation.

Each node is the Java class of the same role; the ``create_*`` functions are Java's
factory methods with their parse-time checks and messages, and ``str(node)`` is Java's
``toString()`` (it appears in those messages). :func:`compile_node` turns a tree into
Python closures once: every node's Java type is known before any message is seen
(properties are Strings, literals Integer, Long or Double, boolean expressions
Boolean), so each comparison picks its conversion at compile time, as
``ComparisonExpression.__compare`` would at run time.

Values while evaluating: ``None`` (Java null: absent, or unknown), ``str``, ``bool``,
``int`` (Integer or Long, told apart by the node's kind) and ``float`` (Double). Where
Java throws (a String that is not a number compared with a number, ``TRUE = a``), the
closure raises :class:`JavaError`, and the whole evaluation fails as Java's does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.filter._java import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    JavaError,
    compare_double,
    compare_string,
    double_to_string,
    parse_boolean,
    parse_double,
    parse_int,
    parse_long,
)

__all__ = ["Node", "compile_node", "required_tags"]

Evaluator = Callable[[Mapping[str, str]], Any]

# Java types of a node's value: String (a property or a literal), Integer, Long, Double,
# Boolean, and N for an expression that is always null (the negation of a non-number).
S, I, L, D, B, N = "String", "Integer", "Long", "Double", "Boolean", "null"  # noqa: E741

_RUNTIME = "java.lang.RuntimeException"


class Node:
    """An expression (Java ``Expression``)."""

    #: Java ``instanceof BooleanExpression``
    boolean = False
    #: the Java type of the value (one of S, I, L, D, B, N)
    kind = N


class Constant(Node):
    """``ConstantExpression`` (``BooleanConstantExpression`` for TRUE, FALSE and NULL)."""

    def __init__(self, value: Any, kind: str = S, boolean: bool = False) -> None:
        self.value = value
        self.kind = kind
        self.boolean = boolean

    def __str__(self) -> str:
        return java_value_string(self.value, self.kind, quote=True)


TRUE = Constant(True, B, boolean=True)
FALSE = Constant(False, B, boolean=True)
NULL = Constant(None, N, boolean=True)


class Property(Node):
    """``PropertyExpression``: a message property, a String or null."""

    kind = S

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name


class Negate(Node):
    """Unary minus: a number negated, anything else null."""

    def __init__(self, operand: Node) -> None:
        self.operand = operand
        self.kind = operand.kind if operand.kind in (I, L, D) else N

    def __str__(self) -> str:
        return f"(- {self.operand})"


class Not(Node):
    """``NOT``: Boolean negation, null stays null."""

    boolean = True
    kind = B

    def __init__(self, operand: Node) -> None:
        self.operand = operand

    def __str__(self) -> str:
        return f"(NOT {self.operand})"


class BooleanCast(Node):
    """A property used as a condition: null when absent, else FALSE (a String is no Boolean)."""

    boolean = True
    kind = B

    def __init__(self, operand: Node) -> None:
        self.operand = operand

    def __str__(self) -> str:
        return str(self.operand)


class Binary(Node):
    """A boolean operator between two operands, printed as Java's ``BinaryExpression``."""

    boolean = True
    kind = B

    def __init__(self, symbol: str, left: Node, right: Node) -> None:
        self.symbol, self.left, self.right = symbol, left, right

    def __str__(self) -> str:
        return f"({self.left} {self.symbol} {self.right})"


class Logic(Binary):
    """``AND`` (``&&``) and ``OR`` (``||``) with SQL's three-valued logic, left first."""


class Compare(Binary):
    """``ComparisonExpression``: ``==`` (also IS NULL, and under ``<>``) ``>``, ``>=``, ``<``, ``<=``."""


class In(Node):
    """``IN`` / ``NOT IN`` over string literals; only a property may be tested."""

    boolean = True
    kind = B

    def __init__(self, operand: Property, items: list[str], negated: bool) -> None:
        self.operand, self.items, self.negated = operand, items, negated

    def __str__(self) -> str:
        items = self.items if len(self.items) < 5 else _java_hash_set_order(self.items)
        return f"{self.operand} {'NOT IN' if self.negated else 'IN'} ( {', '.join(items)} )"


class StringTest(Node):
    """5.x's CONTAINS, STARTSWITH, ENDSWITH and their NOTs: FALSE unless the operand is a String."""

    boolean = True
    kind = B

    def __init__(self, symbol: str, operand: Node, search: str) -> None:
        self.symbol, self.operand, self.search = symbol, operand, search

    def __str__(self) -> str:
        return f"({self.symbol} {self.operand})"


def java_value_string(value: Any, kind: str, quote: bool) -> str:
    """A value as Java prints it (``toString``; strings quoted as literals when ``quote``)."""
    if value is None:
        return "NULL" if quote else "null"
    if kind == B:
        return ("TRUE" if value else "FALSE") if quote else ("true" if value else "false")
    if kind == S:
        return "'" + value.replace("'", "''") + "'" if quote else value
    if kind == D:
        return double_to_string(value)
    return str(value)


def _java_hash_set_order(items: list[str]) -> list[str]:
    """The iteration order of ``new HashSet<>(items)`` (Java prints IN lists of 5+ that way)."""
    capacity = 16
    while capacity < int(len(items) / 0.75) + 1:
        capacity *= 2
    buckets: dict[int, list[str]] = {}
    for item in items:
        h = java_string_hash(item) & 0xFFFFFFFF
        bucket = (h ^ (h >> 16)) & (capacity - 1)
        if item not in buckets.setdefault(bucket, []):
            buckets[bucket].append(item)
    return [item for bucket in sorted(buckets) for item in buckets[bucket]]


# -- Java's factories, with their parse-time checks -----------------------------------


def as_boolean(node: Node) -> Node:
    """``SelectorParser.asBooleanExpression``.

    :raises JavaError: ParseException for an expression that is not a condition
    """
    if node.boolean:
        return node
    if isinstance(node, Property):
        return BooleanCast(node)
    raise JavaError("org.apache.rocketmq.filter.parser.ParseException",
                    f"Expression will not result in a boolean value: {node}")


def decimal_constant(image: str) -> Constant:
    """``ConstantExpression.createFromDecimal``: Integer when it fits, else Long."""
    text = image[:-1] if image[-1] in "lL" else image
    value = int(text)
    if value > LONG_MAX:
        raise JavaError("java.lang.NumberFormatException", f'For input string: "{text}"')
    return Constant(value, I if INT_MIN <= value <= INT_MAX else L)


def float_constant(image: str) -> Constant:
    """``ConstantExpression.createFloat``: a Double; Java refuses 0 and overflow here."""
    value = float(image)
    if value == math.inf:
        raise JavaError(_RUNTIME, f"{image} is greater than 1.7976931348623157E308")
    if value < 5e-324:
        raise JavaError(_RUNTIME, f"{image} is less than 4.9E-324")
    return Constant(value, D)


def create_equal(left: Node, right: Node) -> Node:
    """``ComparisonExpression.createEqual``: refuses NULL, and TRUE/FALSE against other literals."""
    for side in (left, right):
        if isinstance(side, Constant) and side.value is None:
            raise JavaError(_RUNTIME, f"'{side}' cannot be compared.")
    if isinstance(left, Constant) and isinstance(right, Constant) and left.boolean and not right.boolean:
        raise JavaError(_RUNTIME, f"'{left}' cannot be compared with '{right}'")
    return Compare("==", left, right)


def create_ordering(symbol: str, left: Node, right: Node) -> Node:
    """``createGreaterThan`` and kin: only numbers, properties and arithmetic may be ordered."""
    for side in (left, right):
        if (isinstance(side, Constant) and side.kind not in (I, L, D)) or (
                not isinstance(side, Constant) and side.boolean):
            raise JavaError(_RUNTIME, f"Value '{side}' cannot be compared.")
    return Compare(symbol, left, right)


def create_between(value: Node, low: Node, high: Node) -> Node:
    """``createBetween``: two literal bounds must be non-null and in order."""
    if isinstance(low, Constant) and isinstance(high, Constant):
        if low.value is None or high.value is None:
            raise JavaError(_RUNTIME, "Illegal values of between, values can not be null!")
        if _converter(high.kind, low.kind)(high.value, low.value) < 0:
            low_text = java_value_string(low.value, low.kind, False)
            high_text = java_value_string(high.value, high.kind, False)
            raise JavaError(_RUNTIME, f"Illegal values of between, left value({low_text}) must less than or equal "
                            f"to right value({high_text})")
    return Logic("&&", create_ordering(">=", value, low), create_ordering("<=", value, high))


def create_not_between(value: Node, low: Node, high: Node) -> Node:
    """``createNotBetween``: below the low bound or above the high one."""
    return Logic("||", create_ordering("<", value, low), create_ordering(">", value, high))


def create_in(operand: Node, items: list[str], negated: bool) -> Node:
    """``createInFilter`` / ``createNotInFilter``.

    :raises JavaError: when the operand is not a property
    """
    if not isinstance(operand, Property):
        raise JavaError(_RUNTIME, f"Expected a property for In expression, got: {operand}")
    return In(operand, items, negated)


# -- ComparisonExpression.__compare, chosen per pair of Java types -------------------


def _sign(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _class_cast(a: Any, b: Any) -> int:
    # Boolean on the left, String on the right: Java casts the Boolean to String.
    raise JavaError("java.lang.ClassCastException", "class java.lang.Boolean cannot be cast to class "
                    "java.lang.String (java.lang.Boolean and java.lang.String are in module java.base "
                    "of loader 'bootstrap')")


def _less(a: Any, b: Any) -> int:
    return -1


def _runtime(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    # __compare wraps the NumberFormatException of a String conversion in a RuntimeException.
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except JavaError as e:
            raise JavaError(_RUNTIME, str(e)) from None
    return convert


_int, _long, _double = _runtime(parse_int), _runtime(parse_long), _runtime(parse_double)

_CONVERTERS: dict[tuple[str, str], Callable[[Any, Any], int]] = {
    (S, S): compare_string,
    (I, I): _sign, (L, L): _sign, (B, B): _sign, (I, L): _sign, (L, I): _sign,
    (D, D): compare_double,
    (I, D): lambda a, b: compare_double(float(a), b),
    (L, D): lambda a, b: compare_double(float(a), b),
    (D, I): lambda a, b: compare_double(a, float(b)),
    (D, L): lambda a, b: compare_double(a, float(b)),
    (I, S): lambda a, b: _sign(a, _int(b)),
    (L, S): lambda a, b: _sign(a, _long(b)),
    (D, S): lambda a, b: compare_double(a, _double(b)),
    (S, I): lambda a, b: _sign(_int(a), b),
    (S, L): lambda a, b: _sign(_long(a), b),
    (S, D): lambda a, b: compare_double(_double(a), b),
    (S, B): lambda a, b: _sign(parse_boolean(a), b),
    (B, S): _class_cast,
}


def _converter(left: str, right: str) -> Callable[[Any, Any], int]:
    """``__compare`` for a left and a right Java type (unrelated types: -1, "less")."""
    return _CONVERTERS.get((left, right), _less)


def _ordering_strings(a: str, b: str) -> int:
    # ComparisonExpression.evaluate: two Strings are ordered as doubles, or not at all.
    try:
        return compare_double(parse_double(a), parse_double(b))
    except JavaError as e:
        raise JavaError(_RUNTIME, f"It's illegal to compare string by '>=', '>', '<', '<='. lv={a}, rv={b}") from e


_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0, ">=": lambda c: c >= 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0,
}


# -- compilation ---------------------------------------------------------------------


def compile_node(node: Node) -> Evaluator:
    """Compile a tree into one closure ``properties -> True | False | None | value``.

    :param node: a tree from the parser
    :returns: the evaluator; it raises :class:`JavaError` where Java's evaluation throws
    """
    if isinstance(node, Constant):
        value = node.value
        return lambda props: value
    if isinstance(node, Property):
        name = node.name
        return lambda props: props.get(name)
    if isinstance(node, Negate):
        return _compile_negate(node)
    if isinstance(node, Not):
        operand = compile_node(node.operand)

        def not_(props: Mapping[str, str]) -> Any:
            v = operand(props)
            return None if v is None else not v
        return not_
    if isinstance(node, BooleanCast):
        assert isinstance(node.operand, Property)
        name = node.operand.name
        return lambda props: None if props.get(name) is None else False
    if isinstance(node, Logic):
        return _compile_logic(node)
    if isinstance(node, Compare):
        return _compile_compare(node)
    if isinstance(node, In):
        return _compile_in(node)
    if isinstance(node, StringTest):
        return _compile_string_test(node)
    raise TypeError(f"unknown node {node!r}")


def _compile_negate(node: Negate) -> Evaluator:
    operand = compile_node(node.operand)
    if node.kind == N:
        def null(props: Mapping[str, str]) -> Any:
            operand(props)  # evaluated all the same, as Java does (it cannot throw here)
            return None
        return null

    def negate(props: Mapping[str, str]) -> Any:
        v = operand(props)
        return None if v is None else -v
    return negate


def _compile_logic(node: Logic) -> Evaluator:
    # A chain a AND b AND c parses left-deep, ((a AND b) AND c); evaluating it as one loop
    # over a, b, c gives the same answers and order, without a Python frame per operator.
    operands = [node.right]
    left = node.left
    while isinstance(left, Logic) and left.symbol == node.symbol:
        operands.append(left.right)
        left = left.left
    operands.append(left)
    compiled = [compile_node(n) for n in reversed(operands)]
    if len(compiled) == 2:
        first, second = compiled
        if node.symbol == "&&":
            def and2(props: Mapping[str, str]) -> Any:
                lv = first(props)
                if lv is False:
                    return False
                rv = second(props)
                if rv is False:
                    return False
                return None if lv is None or rv is None else True
            return and2

        def or2(props: Mapping[str, str]) -> Any:
            lv = first(props)
            if lv is True:
                return True
            rv = second(props)
            if rv is True:
                return True
            return None if lv is None or rv is None else False
        return or2
    # AND: FALSE as soon as an operand is FALSE, else null if any was null; OR the dual.
    decisive = node.symbol == "||"

    def chain(props: Mapping[str, str]) -> Any:
        unknown = False
        for operand in compiled:
            v = operand(props)
            if v is decisive:
                return decisive
            if v is None:
                unknown = True
        return None if unknown else not decisive
    return chain


def _compile_compare(node: Compare) -> Evaluator:
    lk, rk = node.left.kind, node.right.kind
    if node.symbol == "==":
        return _compile_equal(node, lk, rk)
    test = _TESTS[node.symbol]
    if lk == N or rk == N:
        left, right = compile_node(node.left), compile_node(node.right)

        def unknown(props: Mapping[str, str]) -> Any:
            if left(props) is None:
                return None
            right(props)
            return None
        return unknown
    convert = _ordering_strings if (lk, rk) == (S, S) else _converter(lk, rk)
    # The common shape: a property against a literal number.
    if isinstance(node.left, Property) and isinstance(node.right, Constant):
        name, const = node.left.name, node.right.value
        if rk == I:
            op = node.symbol

            def prop_int(props: Mapping[str, str]) -> Any:
                v = props.get(name)
                if v is None:
                    return None
                if v.isdigit() and v.isascii() and len(v) < 10:
                    n = int(v)
                else:
                    n = _int(v)
                if op == ">":
                    return n > const
                if op == "<":
                    return n < const
                if op == ">=":
                    return n >= const
                return n <= const
            return prop_int

        def prop_const(props: Mapping[str, str]) -> Any:
            v = props.get(name)
            if v is None:
                return None
            return test(convert(v, const))
        return prop_const
    left, right = compile_node(node.left), compile_node(node.right)

    def ordering(props: Mapping[str, str]) -> Any:
        lv = left(props)
        if lv is None:
            return None
        rv = right(props)
        if rv is None:
            return None
        return test(convert(lv, rv))
    return ordering


def _compile_equal(node: Compare, lk: str, rk: str) -> Evaluator:
    # doCreateEqual: null == null is TRUE; null on the left only is null, on the right only FALSE.
    if isinstance(node.left, Property) and isinstance(node.right, Constant):
        name, const = node.left.name, node.right.value
        if const is None:  # IS NULL
            return lambda props: props.get(name) is None
        if rk == S:
            def prop_string(props: Mapping[str, str]) -> Any:
                v = props.get(name)
                return None if v is None else v == const
            return prop_string
        convert = _converter(lk, rk)
        if lk == S and rk in (I, L):
            # The common shape, `a = 0`: plain ASCII digits short enough for the type parse
            # as Integer/Long.valueOf would; anything else takes Java's full conversion.
            digits = 10 if rk == I else 19

            def prop_number(props: Mapping[str, str]) -> Any:
                v = props.get(name)
                if v is None:
                    return None
                if len(v) < digits and v.isdigit() and v.isascii():
                    return int(v) == const
                return convert(v, const) == 0
            return prop_number

        def prop_const(props: Mapping[str, str]) -> Any:
            v = props.get(name)
            return None if v is None else convert(v, const) == 0
        return prop_const
    left, right = compile_node(node.left), compile_node(node.right)
    if (lk, rk) == (S, S):
        def strings(props: Mapping[str, str]) -> Any:
            lv, rv = left(props), right(props)
            if lv is None or rv is None:
                return True if lv is rv else (None if lv is None else False)
            return lv == rv
        return strings
    convert = _converter(lk, rk)

    def equal(props: Mapping[str, str]) -> Any:
        lv, rv = left(props), right(props)
        if lv is None or rv is None:
            return True if lv is rv else (None if lv is None else False)
        return convert(lv, rv) == 0
    return equal


def _compile_in(node: In) -> Evaluator:
    name, items, negated = node.operand.name, frozenset(node.items), node.negated

    def in_(props: Mapping[str, str]) -> Any:
        v = props.get(name)
        if v is None:
            return None
        return (v in items) is not negated
    return in_


def _compile_string_test(node: StringTest) -> Evaluator:
    operand, search = compile_node(node.operand), node.search
    negated = node.symbol.startswith("NOT ")
    method = {"CONTAINS": str.__contains__, "STARTSWITH": str.startswith,
              "ENDSWITH": str.endswith}[node.symbol.removeprefix("NOT ")]
    if not search:
        return lambda props: False  # Java answers FALSE before it looks at the operand
    if node.operand.kind != S:
        def not_a_string(props: Mapping[str, str]) -> Any:
            operand(props)
            return False
        return not_a_string

    def test(props: Mapping[str, str]) -> Any:
        v = operand(props)
        if v is None:
            return False
        return method(v, search) is not negated
    return test


def required_tags(node: Node) -> frozenset[str] | None:
    """The TAGS values a match requires: from ``TAGS = 'x'`` / ``TAGS IN (...)`` ANDed at the top.

    :returns: the allowed tags (their intersection over such conjuncts), or None when no
        conjunct constrains TAGS
    """
    found: frozenset[str] | None = None
    stack = [node]
    while stack:
        n = stack.pop()
        tags: frozenset[str] | None = None
        if isinstance(n, Logic) and n.symbol == "&&":
            stack += [n.left, n.right]
        elif isinstance(n, Compare) and n.symbol == "==":
            for a, b in ((n.left, n.right), (n.right, n.left)):
                if isinstance(a, Property) and a.name == "TAGS" and isinstance(b, Constant) and b.kind == S:
                    tags = frozenset([b.value])
        elif isinstance(n, In) and not n.negated and n.operand.name == "TAGS":
            tags = frozenset(n.items)
        if tags is not None:
            found = tags if found is None else found & tags
    return found

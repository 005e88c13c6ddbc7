# -*- test-case-name: rocketmq_tx.filter.test.test_filter -*-
"""
SQL92 message filters: Java RocketMQ's ``SelectorParser`` and ``filter/expression``.

Sans-IO and Twisted-free: the broker compiles a consumer's ``MessageSelector.bySql``
expression once (:func:`compile_sql92`) and asks :meth:`CompiledFilter.matches` for each
message it scans, with the message's properties as the CommitLog holds them (Strings,
``TAGS`` among them). The grammar is RocketMQ 5.x's (4.9's plus CONTAINS, STARTSWITH and
ENDSWITH, which 5.x made keywords); the results are Java's ``evaluate()``: a message
matches only when that gives ``Boolean.TRUE``. Absent properties make a condition
unknown (null) with Java's three-valued AND, OR and NOT, and where Java's evaluation
throws (a property that is not a number compared with a number) the message does not
match, whatever the rest of the expression says.

The parser is hand-written (``_parser``: why, in its docstring), the tree and its
compilation to closures are in ``_ast``, and the Java library behaviours they rely on
(number parsing, ``Double.compare``) in ``_java``.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketmq_tx.filter._ast import Node, compile_node, required_tags
from rocketmq_tx.filter._java import JavaError
from rocketmq_tx.filter._parser import parse

__all__ = ["FilterExpressionError", "CompiledFilter", "compile_sql92"]


class FilterExpressionError(ValueError):
    """An SQL92 expression Java's parser refuses.

    ``str(e)`` is what Java's ``MQFilterException.getMessage()`` gives (the broker's remark
    for SUBSCRIPTION_PARSE_FAILED): the Java exception's class and message, e.g.
    ``org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" at line 1, ...``.
    """


class CompiledFilter:
    """A compiled SQL92 expression.

    :ivar expression: the text it was compiled from
    :ivar tags: the TAGS values a matching message must have (from ``TAGS = 'x'`` or
        ``TAGS IN (...)`` ANDed at the top level), or None when the expression does not
        pin TAGS down; a broker may check the ConsumeQueue's tag hash against it first
    """

    __slots__ = ("expression", "tags", "_evaluate", "_tree")

    def __init__(self, expression: str, tree: Node) -> None:
        self.expression = expression
        self._tree = tree
        self._evaluate = compile_node(tree)
        self.tags: frozenset[str] | None = required_tags(tree)

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether Java's ``evaluate()`` gives TRUE for a message with these properties.

        :param properties: the message's properties (user and system), Strings
        :returns: True only for TRUE; False for FALSE, for null (unknown) and where Java
            throws while evaluating. Never raises.
        """
        try:
            return self._evaluate(properties) is True
        except Exception:
            return False

    def __repr__(self) -> str:
        return f"CompiledFilter({self.expression!r})"

    def __str__(self) -> str:
        """Java's ``toString()`` of the compiled expression."""
        return str(self._tree)


def compile_sql92(expression: str) -> CompiledFilter:
    """Compile an SQL92 selector as Java's ``SqlFilter.compile`` does.

    :param expression: the selector (``SubscriptionData.subString``)
    :returns: the compiled filter
    :raises FilterExpressionError: when Java's parser refuses the expression; its text is
        the remark Java's broker would answer with
    """
    try:
        return CompiledFilter(expression, parse(expression))
    except JavaError as e:
        raise FilterExpressionError(str(e)) from None
    except RecursionError:
        # Java's parser overflows its stack too (StackOverflowError) on very deep nesting.
        raise FilterExpressionError("java.lang.StackOverflowError") from None

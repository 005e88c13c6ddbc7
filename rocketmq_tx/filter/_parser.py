# -*- test-case-name: rocketmq_tx.filter.test.test_filter -*-
"""
The lexer and parser of Java's ``SelectorParser.jj`` (RocketMQ 5.x), hand-written.

Why not a parsing library (lark was the first candidate): Java's parser is an LL(2)
JavaCC parser whose quirks are part of the behaviour clients see, and an LALR or Earley
parser reproduces them only with work-arounds:

* it stops after the first complete expression and ignores what follows (``a = 1 b c``
  is ``a = 1``), yet the lexer is lazy and still fails on a bad character right after it;
* its semantic checks (``'x' > 1``, ``BETWEEN 5 AND 1``, ``IN`` on a non-property) run
  while parsing, so the first error in parse order is the one reported;
* the refusal text a client gets in CHECK_CLIENT_CONFIG's remark is JavaCC's: the token
  met, its line and column (tabs count to the next multiple of 8) and the tokens the
  LL(k) choice points tried there, in JavaCC's order.

So each production below is one method, shaped as the .jj production, and the lexer
is JavaCC's longest-match rule over the same token definitions. The text is handled as
Java's UTF-16 code units (columns, ``charAt``), and turned back into Python strings
for the literal values.

The expected-token lists are JavaCC's: the choice points that failed at the current
token (``jj_la1``), the token a consume wanted, and the LOOKAHEAD(2) sequences tried
there (with JavaCC's duplicate check, which drops a sequence whose predecessor in the
list has another length). The unbounded ``LOOKAHEAD("+" unaryExpr())`` is scanned by a
check-free run of the same productions; past its "+" its sequence is approximated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NoReturn

from rocketmq_tx.filter import _ast as A
from rocketmq_tx.filter._java import JavaError

__all__ = ["parse"]

# Token kinds, numbered as SelectorParserConstants (the numbers order JavaCC's lists).
EOF, NOT, AND, OR, BETWEEN, IN, TRUE, FALSE, NULL, IS = 0, 8, 9, 10, 11, 12, 13, 14, 15, 16
CONTAINS, STARTSWITH, ENDSWITH = 17, 18, 19
DECIMAL, FLOAT, STRING, ID = 20, 21, 23, 24
EQ, NE, GT, GE, LT, LE, LPAREN, COMMA, RPAREN, PLUS, MINUS = 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35

_IMAGES = {
    EOF: "<EOF>", NOT: '"NOT"', AND: '"AND"', OR: '"OR"', BETWEEN: '"BETWEEN"', IN: '"IN"', TRUE: '"TRUE"',
    FALSE: '"FALSE"', NULL: '"NULL"', IS: '"IS"', CONTAINS: '"CONTAINS"', STARTSWITH: '"STARTSWITH"',
    ENDSWITH: '"ENDSWITH"', DECIMAL: "<DECIMAL_LITERAL>", FLOAT: "<FLOATING_POINT_LITERAL>",
    STRING: "<STRING_LITERAL>", ID: "<ID>", EQ: '"="', NE: '"<>"', GT: '">"', GE: '">="', LT: '"<"', LE: '"<="',
    LPAREN: '"("', COMMA: '","', RPAREN: '")"', PLUS: '"+"', MINUS: '"-"',
}
_KEYWORDS = {"NOT": NOT, "AND": AND, "OR": OR, "BETWEEN": BETWEEN, "IN": IN, "TRUE": TRUE, "FALSE": FALSE,
             "NULL": NULL, "IS": IS, "CONTAINS": CONTAINS, "STARTSWITH": STARTSWITH, "ENDSWITH": ENDSWITH}
_OPERATORS = {"=": EQ, "<>": NE, ">": GT, ">=": GE, "<": LT, "<=": LE, "(": LPAREN, ",": COMMA, ")": RPAREN,
              "+": PLUS, "-": MINUS}

# One alternative per token definition; at a position the longest match wins, and on a
# tie the definition listed first (JavaCC's rule). None = skipped (white space, comments).
_RULES: tuple[tuple[re.Pattern[str], int | None], ...] = (
    (re.compile(r"[ \t\n\r\f]"), None),
    (re.compile(r"--[^\n\r]*(?:\r\n|\n|\r)"), None),
    (re.compile(r"/\*[^*]*\*(?:\*|[^*/][^*]*\*)*/"), None),
    (re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*"), ID),  # keywords are IDs of the same length, listed earlier
    (re.compile(r"0|[1-9][0-9]*[lL]?"), DECIMAL),
    (re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"), FLOAT),
    (re.compile(r"'(?:''|[^'])*'"), STRING),
    (re.compile(r"<>|>=|<=|[=<>(),+-]"), -1),
)
# JavaCC's SelectorParser choice points (jj_la1): what each expected when it failed.
_LA1 = (
    (OR,), (AND,), (IS, EQ, NE), (EQ, NE), (IS,),
    (NOT, BETWEEN, IN, CONTAINS, STARTSWITH, ENDSWITH, GT, GE, LT, LE), (COMMA,), (COMMA,),
    (GT, GE, LT, LE, CONTAINS), (STARTSWITH,), (ENDSWITH,), (BETWEEN,), (IN,),
    (MINUS, NOT, TRUE, FALSE, NULL, DECIMAL, FLOAT, STRING, ID, LPAREN),
    (TRUE, FALSE, NULL, DECIMAL, FLOAT, STRING, ID, LPAREN),
    (STRING, DECIMAL, FLOAT, TRUE, FALSE, NULL),
)
# The LOOKAHEAD(2) alternatives (jj_2_1 .. jj_2_6) and the "+" of unaryExpr (jj_2_7, first token).
_LOOKAHEADS = ((IS, NULL), (NOT, CONTAINS), (NOT, STARTSWITH), (NOT, ENDSWITH), (NOT, BETWEEN), (NOT, IN), (PLUS,))


@dataclass(slots=True)
class Token:
    """One token: its kind, its text (UTF-16 units as a str) and where it begins."""

    kind: int
    image: str
    line: int
    column: int


def _utf16_units(text: str) -> str:
    """``text`` as Java sees it: one character per UTF-16 code unit (surrogates apart)."""
    if text.isascii() or all(ord(c) < 0x10000 for c in text):
        return text
    raw = text.encode("utf-16-le", "surrogatepass")
    return "".join(chr(raw[i] | raw[i + 1] << 8) for i in range(0, len(raw), 2))


def _from_units(units: str) -> str:
    """Join surrogate pairs back (lone surrogates stay as they are)."""
    if all(ord(c) < 0xD800 or ord(c) > 0xDFFF for c in units):
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def java_escape(text: str) -> str:
    """JavaCC's ``addEscapes``, used in its error texts.

    :param text: UTF-16 units
    :returns: the escaped text
    """
    out = []
    for c in text:
        o = ord(c)
        if o == 0:
            continue
        if c in "\b\t\n\f\r\"'\\":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"',
                        "'": "\\'", "\\": "\\\\"}[c])
        elif o < 0x20 or o > 0x7E:
            out.append(f"\\u{o:04x}")
        else:
            out.append(c)
    return "".join(out)


class _Lexer:
    """JavaCC's token manager over the UTF-16 units of the expression, one token on demand."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        # (line, column) of each unit, counted as JavaCC's SimpleCharStream does.
        self.where: list[tuple[int, int]] = []
        line, col, after_lf, after_cr = 1, 0, False, False
        for c in text:
            col += 1
            if after_lf:
                after_lf, line, col = False, line + 1, 1
            elif after_cr:
                after_cr = False
                if c == "\n":
                    after_lf = True
                else:
                    line, col = line + 1, 1
            if c == "\r":
                after_cr = True
            elif c == "\n":
                after_lf = True
            elif c == "\t":
                col -= 1
                col += 8 - col % 8
            self.where.append((line, col))

    def next(self) -> Token:
        """The next token (skipping white space and comments).

        :raises JavaError: TokenMgrError's text when no token starts here
        """
        text = self.text
        while True:
            start = self.pos
            if start >= len(text):
                line, col = self.where[-1] if text else (0, 0)
                return Token(EOF, "", line, col)
            best, kind = 0, None
            for pattern, k in _RULES:
                m = pattern.match(text, start)
                if m is not None and m.end() - start > best:
                    best, kind = m.end() - start, k
            if best == 0:
                self._lexical_error(start)
            self.pos = start + best
            if kind is None:
                continue
            image = text[start:self.pos]
            if kind == ID:
                kind = _KEYWORDS.get(image.upper(), ID) if image.isascii() else ID
            elif kind == -1:
                kind = _OPERATORS[image]
            line, col = self.where[start]
            return Token(kind, image, line, col)

    def _lexical_error(self, start: int) -> NoReturn:
        text = self.text
        # How far a token could still have been read: the units the DFA consumed.
        c = text[start]
        if c == "'":
            viable = len(text) - start  # an unterminated string runs to the end
        elif c == "/" and text.startswith("/*", start):
            viable = len(text) - start  # an unterminated block comment
        elif c in "./":
            viable = 1
        else:
            viable = 0
        kill = start + viable
        if kill < len(text) and kill + 1 < len(text):
            line, col = self.where[kill]
            after = text[start:kill]
            found = f'"{java_escape(text[kill])}" ({ord(text[kill])}), '
        else:
            last = min(kill, len(text) - 1)
            line, col = self.where[last]
            if text[last] in "\r\n":
                line, col = line + 1, 0
            else:
                col += 1
            consumed = viable + 1 if kill < len(text) else viable
            after = text[start:last + 1] if consumed > 1 else ""
            found = "<EOF> "
        raise JavaError("org.apache.rocketmq.filter.parser.TokenMgrError", f"Lexical error at line {line}, "
                        f'column {col}.  Encountered: {found}after : "{java_escape(after)}"')


class _Unchecked:
    """The factories without their checks: a syntactic LOOKAHEAD scan runs no actions."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args: A.TRUE


class _Parser:
    """Recursive descent over the productions of SelectorParser.jj (5.x)."""

    def __init__(self, text: str) -> None:
        self.lexer = _Lexer(text)
        self.tokens: list[Token] = []
        self.index = 0  # tokens consumed so far (``token`` is tokens[index - 1])
        self.la1 = [-1] * len(_LA1)
        # per LOOKAHEAD site: [gen, first token index, depth] records (JavaCC's jj_2_rtns)
        self.saved: list[list[list[int]]] = [[] for _ in _LOOKAHEADS]
        self.wanted = -1
        self.build: Any = A

    # -- tokens -------------------------------------------------------------------------

    def _peek(self, ahead: int = 0) -> Token:
        while len(self.tokens) <= self.index + ahead:
            self.tokens.append(self.lexer.next())
        return self.tokens[self.index + ahead]

    def _kind(self) -> int:
        return self._peek().kind

    def _consume(self, kind: int) -> Token:
        tok = self._peek()
        if tok.kind != kind:
            self.wanted = kind
            self._parse_error()
        self.index += 1
        return tok

    def _choice_failed(self, point: int) -> None:
        self.la1[point] = self.index

    def _lookahead(self, site: int) -> bool:
        """A LOOKAHEAD(2) alternative (sites 0-5): do the next tokens match it?"""
        seq = _LOOKAHEADS[site]
        scanned = 0
        ok = True
        for i, kind in enumerate(seq):
            scanned = i + 1
            if self._peek(i).kind != kind:
                ok = False
                break
        self._save(site, scanned)
        return ok

    def _plus_lookahead(self) -> bool:
        """LOOKAHEAD("+" unaryExpr()): a "+" followed by a syntactically whole unaryExpr."""
        if self._peek().kind != PLUS:
            self._save(6, 1)
            return False
        probe = _Parser.__new__(_Parser)
        probe.lexer, probe.tokens, probe.index = self.lexer, self.tokens, self.index + 1
        probe.la1, probe.saved, probe.wanted = [-1] * len(_LA1), [[] for _ in _LOOKAHEADS], -1
        probe.build = _Unchecked()
        try:
            probe.unary_expr()
            ok = True
        except JavaError as e:
            if e.java_class != "org.apache.rocketmq.filter.parser.ParseException":
                raise  # a lexical error stops the scan as it stops the parse
            ok = False
        self._save(6, max(1, probe.index - self.index))
        return ok

    def _save(self, site: int, scanned: int) -> None:
        records = self.saved[site]
        for rec in records:
            if rec[0] <= self.index:
                rec[:] = [self.index + scanned, self.index, scanned]
                return
        records.append([self.index + scanned, self.index, scanned])

    def _parse_error(self) -> NoReturn:
        """Raise JavaCC's ParseException for the next token, with its list of what was expected."""
        kinds = set(k for point, gen in enumerate(self.la1) if gen == self.index for k in _LA1[point])
        if self.wanted >= 0:
            kinds.add(self.wanted)
        expected: list[tuple[int, ...]] = [(k,) for k in sorted(kinds)]
        path: list[int] = []

        def flush() -> None:
            # JavaCC's jj_add_error_token, whose duplicate check only lets a sequence in when
            # the last one listed has the same length (and no listed one is equal).
            entry = tuple(path)
            exists = False
            for old in expected:
                exists = True
                if len(old) == len(entry):
                    exists = old == entry
                    if exists:
                        break
            if not exists:
                expected.append(entry)

        def add(kind: int, pos: int) -> None:
            if pos == len(path) + 1:
                path.append(kind)
            elif path:
                flush()
                if pos != 0:
                    del path[pos - 1:]
                    path.extend([0] * (pos - 1 - len(path)))
                    path.append(kind)

        for site, records in enumerate(self.saved):
            for gen, first, _depth in records:
                if gen <= self.index:
                    continue
                for i, kind in enumerate(_LOOKAHEADS[site]):
                    at = first + i
                    if at >= self.index - 1:
                        add(kind, at - self.index + 1)
                    if self._peek(at - self.index).kind != kind:
                        break
                else:
                    if site == 6 and at >= self.index - 1:
                        # the scan went on into unaryExpr: the sequence grows past one token
                        add(PLUS, at - self.index + 2)
        add(EOF, 0)
        tok = self._peek()
        shown = []
        for i in range(max((len(s) for s in expected), default=0)):
            t = self._peek(i)
            if t.kind == EOF:
                shown.append(_IMAGES[EOF])
                break
            shown.append(f' {_IMAGES[t.kind]} "{java_escape(t.image)} "')
        body = "".join(" ".join(_IMAGES[k] for k in seq) + " " + ("..." if seq[-1] != EOF else "") + "\n    "
                       for seq in expected)
        head = "Was expecting:" if len(expected) == 1 else "Was expecting one of:"
        raise JavaError("org.apache.rocketmq.filter.parser.ParseException",
                        f'Encountered "{" ".join(shown)}" at line {tok.line}, column {tok.column}.\n{head}\n    {body}')

    # -- productions --------------------------------------------------------------------

    def selector(self) -> A.Node:
        """JmsSelector: an orExpression that must be boolean; what follows is not read."""
        return self.build.as_boolean(self.or_expr())

    def or_expr(self) -> A.Node:
        left = self.and_expr()
        while self._kind() == OR:
            self._consume(OR)
            right = self.and_expr()
            left = A.Logic("||", self.build.as_boolean(left), self.build.as_boolean(right))
        self._choice_failed(0)
        return left

    def and_expr(self) -> A.Node:
        left = self.equality_expr()
        while self._kind() == AND:
            self._consume(AND)
            right = self.equality_expr()
            left = A.Logic("&&", self.build.as_boolean(left), self.build.as_boolean(right))
        self._choice_failed(1)
        return left

    def equality_expr(self) -> A.Node:
        left = self.comparison_expr()
        while True:
            kind = self._kind()
            if kind not in (IS, EQ, NE):
                self._choice_failed(2)
                return left
            if kind == EQ:
                self._consume(EQ)
                left = self.build.create_equal(left, self.comparison_expr())
            elif kind == NE:
                self._consume(NE)
                left = A.Not(self.build.create_equal(left, self.comparison_expr()))
            else:
                self._choice_failed(3)
                if self._lookahead(0):
                    self._consume(IS)
                    self._consume(NULL)
                    left = A.Compare("==", left, A.NULL)
                else:
                    self._consume(IS)
                    self._consume(NOT)
                    self._consume(NULL)
                    left = A.Not(A.Compare("==", left, A.NULL))

    def comparison_expr(self) -> A.Node:
        left = self.unary_expr()
        while True:
            kind = self._kind()
            if kind not in (NOT, BETWEEN, IN, CONTAINS, STARTSWITH, ENDSWITH, GT, GE, LT, LE):
                self._choice_failed(5)
                return left
            if kind in (GT, GE, LT, LE):
                self._consume(kind)
                left = self.build.create_ordering({GT: ">", GE: ">=", LT: "<", LE: "<="}[kind], left, self.unary_expr())
                continue
            if kind == CONTAINS:
                self._consume(CONTAINS)
                left = A.StringTest("CONTAINS", left, self.string_literal())
                continue
            self._choice_failed(8)
            if self._lookahead(1):
                self._consume(NOT)
                self._consume(CONTAINS)
                left = A.StringTest("NOT CONTAINS", left, self.string_literal())
                continue
            if self._kind() == STARTSWITH:
                self._consume(STARTSWITH)
                left = A.StringTest("STARTSWITH", left, self.string_literal())
                continue
            self._choice_failed(9)
            if self._lookahead(2):
                self._consume(NOT)
                self._consume(STARTSWITH)
                left = A.StringTest("NOT STARTSWITH", left, self.string_literal())
                continue
            if self._kind() == ENDSWITH:
                self._consume(ENDSWITH)
                left = A.StringTest("ENDSWITH", left, self.string_literal())
                continue
            self._choice_failed(10)
            if self._lookahead(3):
                self._consume(NOT)
                self._consume(ENDSWITH)
                left = A.StringTest("NOT ENDSWITH", left, self.string_literal())
                continue
            if self._kind() == BETWEEN:
                self._consume(BETWEEN)
                low = self.unary_expr()
                self._consume(AND)
                high = self.unary_expr()
                left = self.build.create_between(left, low, high)
                continue
            self._choice_failed(11)
            if self._lookahead(4):
                self._consume(NOT)
                self._consume(BETWEEN)
                low = self.unary_expr()
                self._consume(AND)
                high = self.unary_expr()
                left = self.build.create_not_between(left, low, high)
                continue
            if self._kind() == IN:
                self._consume(IN)
                left = self.build.create_in(left, self._in_list(6), False)
                continue
            self._choice_failed(12)
            if self._lookahead(5):
                self._consume(NOT)
                self._consume(IN)
                left = self.build.create_in(left, self._in_list(7), True)
                continue
            self.wanted = -1
            self._parse_error()

    def _in_list(self, point: int) -> list[str]:
        self._consume(LPAREN)
        items = [self.string_literal()]
        while self._kind() == COMMA:
            self._consume(COMMA)
            items.append(self.string_literal())
        self._choice_failed(point)
        self._consume(RPAREN)
        return items

    def unary_expr(self) -> A.Node:
        if self._plus_lookahead():
            self._consume(PLUS)
            return self.unary_expr()
        kind = self._kind()
        if kind == MINUS:
            self._consume(MINUS)
            return A.Negate(self.unary_expr())
        if kind == NOT:
            self._consume(NOT)
            return A.Not(self.build.as_boolean(self.unary_expr()))
        if kind in (TRUE, FALSE, NULL, DECIMAL, FLOAT, STRING, ID, LPAREN):
            return self.primary_expr()
        self._choice_failed(13)
        self.wanted = -1
        self._parse_error()

    def primary_expr(self) -> A.Node:
        kind = self._kind()
        if kind in (TRUE, FALSE, NULL, DECIMAL, FLOAT, STRING):
            return self.literal()
        if kind == ID:
            return A.Property(_from_units(self._consume(ID).image))
        if kind == LPAREN:
            self._consume(LPAREN)
            inner = self.or_expr()
            self._consume(RPAREN)
            return inner
        self._choice_failed(14)
        self.wanted = -1
        self._parse_error()

    def literal(self) -> A.Node:
        kind = self._kind()
        if kind == STRING:
            return A.Constant(self.string_literal())
        if kind == DECIMAL:
            return self.build.decimal_constant(self._consume(DECIMAL).image)
        if kind == FLOAT:
            return self.build.float_constant(self._consume(FLOAT).image)
        if kind == TRUE:
            self._consume(TRUE)
            return A.TRUE
        if kind == FALSE:
            self._consume(FALSE)
            return A.FALSE
        if kind == NULL:
            self._consume(NULL)
            return A.NULL
        self._choice_failed(15)
        self.wanted = -1
        self._parse_error()

    def string_literal(self) -> str:
        image = self._consume(STRING).image
        return _from_units(image[1:-1].replace("''", "'"))


def parse(expression: str) -> A.Node:
    """Parse an SQL92 selector as Java's ``SelectorParser.parse`` does.

    :param expression: the selector text
    :returns: the boolean expression tree
    :raises JavaError: the Java exception class and message Java's parser would give
    """
    return _Parser(_utf16_units(expression)).selector()

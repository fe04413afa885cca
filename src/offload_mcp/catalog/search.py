"""Find a tool in the catalog: BM25 over its words, or a bounded regex.

How it works: each tool becomes one document made of three fields — its
name (weight 3), its parameter names (weight 2) and its description
(weight 1). Words are split on case and punctuation (`listBranches`,
`list_branches` and "list branches" all give `list branch`), lowercased,
lightly stemmed, and folded through a small table of everyday synonyms
(remove/delete, fetch/get, folder/directory, ...). A query is scored with
BM25 (k1=1.2, b=0.75) against those weighted term frequencies. Ranking is
by score, ties broken by name, so the same catalog and query always give the
same list in the same order.

The regex form matches a pattern (Python `re` syntax, case-insensitive)
against "name\\ndescription\\nparameter names" of each tool. Python's `re`
cannot be interrupted, so a pattern that backtracks catastrophically (say
`(a|aa)*c`) would pin a worker thread: patterns are run by the `regex`
module instead, whose matcher takes a timeout and handles many such shapes
without blowing up, against one time budget for the whole search. Before
that, the shapes known to blow up — a repeated group holding an unbounded
quantifier (`(a+)+`, `(.*a){20}`) and backreferences — are refused outright,
so the common pathological cases fail the same way every time rather than
depending on the machine's speed.

When it shines: catalogs of tens to thousands of tools whose descriptions
say what they do. Inert: a tool with no description and a cryptic name is
found only by name words; a query made only of stopwords finds nothing
(reason `empty_query`).
"""

from __future__ import annotations

import math
import re
import re._parser as sre_parse  # the stdlib's own regex parser: used only to inspect a pattern's shape
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import mcp_types as types
import regex

NAME_WEIGHT = 3.0
PARAM_WEIGHT = 2.0
DESCRIPTION_WEIGHT = 1.0
K1 = 1.2
B = 0.75
MAX_PATTERN_CHARS = 256

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_A-Za-z]+")

STOPWORDS = frozenset(
    """a an the to of for in on at by with from into onto and or but not no nor is are was were be been being
    it its this that these those there their them they i me my we our you your he she his her him as if then
    than so such can could should would will shall may might must do does did done have has had having
    please want need like some any all each every one which what who whom whose when where why how
    about also just only very via using use used currently given""".split()
)

# Everyday synonyms folded to one stem, on both sides, so "remove a folder" finds "delete_directory".
_SYNONYM_GROUPS = (
    ("delet", "remov", "eras", "destroy", "unlink"),
    ("creat", "make", "generat"),
    ("get", "fetch", "retriev", "obtain", "read", "load"),
    ("show", "display", "view", "print"),
    ("list", "enumerat"),
    ("updat", "modify", "modifi", "edit", "chang", "alter", "patch"),
    ("search", "find", "look", "lookup", "query", "locat"),
    ("run", "execut", "invok", "launch", "trigger"),
    ("stop", "halt", "terminat", "kill", "abort"),
    ("directory", "folder", "dir"),
    ("repository", "repo"),
    ("messag", "msg"),
    ("configur", "config", "configuration", "setting"),
)
SYNONYMS = {word: group[0] for group in _SYNONYM_GROUPS for word in group}


def stem(word: str) -> str:
    """A light, deterministic suffix stripper: enough to meet `files`/`file`, `listing`/`list`."""
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and (w.endswith(("sses", "ches", "shes", "xes", "zes"))):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


def terms(text: str) -> list[str]:
    """Words of a text as index terms: split, lowercased, stopwords dropped, stemmed, synonyms folded."""
    out = []
    for raw in _WORD.findall(text):
        word = raw.lower()
        if word in STOPWORDS:
            continue
        stemmed = stem(word)
        out.append(SYNONYMS.get(stemmed, SYNONYMS.get(word, stemmed)))
    return out


def parameter_names(tool: types.Tool) -> list[str]:
    props = tool.input_schema.get("properties") if isinstance(tool.input_schema, dict) else None
    return sorted(props) if isinstance(props, dict) else []


@dataclass(frozen=True)
class Match:
    name: str
    score: float


class SearchRefused(ValueError):
    """A query or pattern the search will not run, with a reason the model can act on."""


class ToolIndex:
    """A BM25 index over a fixed list of tools; rebuild it when the catalog changes."""

    def __init__(self, tools: Sequence[types.Tool]) -> None:
        self.tools = {tool.name: tool for tool in sorted(tools, key=lambda t: t.name)}
        self._tf: dict[str, dict[str, float]] = {}
        self._len: dict[str, float] = {}
        df: Counter[str] = Counter()
        for name, tool in self.tools.items():
            tf: dict[str, float] = {}
            for text, weight in (
                (name, NAME_WEIGHT),
                (" ".join(parameter_names(tool)), PARAM_WEIGHT),
                (tool.description or "", DESCRIPTION_WEIGHT),
            ):
                for term in terms(text):
                    tf[term] = tf.get(term, 0.0) + weight
            self._tf[name] = tf
            self._len[name] = sum(tf.values())
            df.update(tf.keys())
        n = len(self.tools)
        self._avg_len = (sum(self._len.values()) / n) if n else 0.0
        self._idf = {term: math.log(1.0 + (n - count + 0.5) / (count + 0.5)) for term, count in df.items()}
        self._texts = {name: searchable_text(tool) for name, tool in self.tools.items()}

    def __len__(self) -> int:
        return len(self.tools)

    def bm25(self, query: str, limit: int) -> list[Match]:
        """Best `limit` tools for a natural-language query; raises SearchRefused if it has no usable words."""
        query_terms = terms(query)
        if not query_terms:
            raise SearchRefused(
                "the query has no searchable words (only stopwords, punctuation or nothing): describe the task, e.g. 'read a file'"
            )
        counts = Counter(query_terms)
        scored = []
        for name, tf in self._tf.items():
            score = 0.0
            norm = K1 * (1.0 - B + B * self._len[name] / self._avg_len) if self._avg_len else K1
            for term in sorted(counts):
                freq = tf.get(term)
                if freq:
                    score += counts[term] * self._idf[term] * freq * (K1 + 1.0) / (freq + norm)
            if score > 0.0:
                # Rounded so that float noise can never reorder equal scores across platforms.
                scored.append(Match(name, round(score, 9)))
        scored.sort(key=lambda m: (-m.score, m.name))
        return scored[:limit]

    def regex(self, pattern: str, limit: int, timeout_s: float) -> tuple[list[Match], int]:
        """Tools whose text matches `pattern`: name matches first, then by name; and how many matched."""
        compiled = compile_bounded(pattern)
        deadline = time.monotonic() + timeout_s
        hits: list[tuple[int, str]] = []
        for name, text in self._texts.items():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SearchRefused(f"the pattern took longer than {timeout_s:g}s to run over the catalog: simplify it")
            try:
                found = compiled.search(text, timeout=remaining)
            except TimeoutError:
                raise SearchRefused(
                    f"the pattern took longer than {timeout_s:g}s to run over the catalog: simplify it"
                ) from None
            if found is not None:
                hits.append((0 if found.start() < len(name) else 1, name))
        hits.sort()
        return [Match(name, 1.0 if where == 0 else 0.5) for where, name in hits[:limit]], len(hits)


def searchable_text(tool: types.Tool) -> str:
    return "\n".join((tool.name, tool.description or "", " ".join(parameter_names(tool))))


def compile_bounded(pattern: str) -> regex.Pattern[str]:
    """Compile a user pattern or raise SearchRefused naming what is wrong with it."""
    if not pattern:
        raise SearchRefused("the pattern is empty: give a regular expression such as 'git_.*' or 'read|write'")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise SearchRefused(f"the pattern is {len(pattern)} chars long; at most {MAX_PATTERN_CHARS} are accepted")
    try:
        # Python `re` syntax only: the `regex` module's extras (fuzzy matching above all) are slow by design.
        parsed = sre_parse.parse(pattern, re.IGNORECASE)
    except re.error as err:
        raise SearchRefused(f"the pattern is not a valid regular expression (Python re syntax): {err}") from None
    except (RecursionError, OverflowError):
        raise SearchRefused("the pattern nests too deeply") from None
    if _LOOSE_BRACE.search(pattern):
        # `re` reads such a brace as a literal, `regex` as fuzzy matching: write \\{ for a literal brace.
        raise SearchRefused(
            "the pattern has a `{` that is not a repeat count like {2} or {1,3}: write \\{ for a literal brace"
        )
    problem = _risky_shape(parsed, inside_repeat=False)
    if problem:
        raise SearchRefused(
            f"the pattern is refused: {problem} can backtrack catastrophically; rewrite it without that"
        )
    try:
        return regex.compile(pattern, regex.IGNORECASE | regex.MULTILINE | regex.VERSION0)
    except (regex.error, OverflowError, RecursionError) as err:
        raise SearchRefused(f"the pattern is not a valid regular expression: {err}") from None


_LOOSE_BRACE = re.compile(r"(?<!\\)(?:\\\\)*\{(?!\d+(?:,\d*)?\}|,\d+\})")

_REPEATS = (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", sre_parse.MAX_REPEAT))


def _risky_shape(items: Iterable, *, inside_repeat: bool) -> str | None:
    for op, arg in items:
        if op in (sre_parse.GROUPREF, sre_parse.GROUPREF_EXISTS):
            return "a backreference"
        if op in _REPEATS:
            low, high, body = arg
            unbounded = high == sre_parse.MAXREPEAT or high > 1000
            if inside_repeat and unbounded:
                return "a quantifier inside a repeated group (like `(a+)+`)"
            problem = _risky_shape(body, inside_repeat=inside_repeat or high > 1)
            if problem:
                return problem
        elif op == sre_parse.SUBPATTERN:
            problem = _risky_shape(arg[-1], inside_repeat=inside_repeat)
            if problem:
                return problem
        elif op == sre_parse.BRANCH:
            for branch in arg[1]:
                problem = _risky_shape(branch, inside_repeat=inside_repeat)
                if problem:
                    return problem
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            problem = _risky_shape(arg[1], inside_repeat=inside_repeat)
            if problem:
                return problem
        elif op == getattr(sre_parse, "ATOMIC_GROUP", None):
            problem = _risky_shape(arg, inside_repeat=inside_repeat)
            if problem:
                return problem
    return None

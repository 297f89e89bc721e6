"""bench/symbolize --obj: how function names are compared across demanglers.

hearth demangles with libiberty (what c++filt and addr2line use), llvm-symbolizer with
LLVM's own demangler. Given the same mangled name they print the same function with
different punctuation; norm() maps both spellings to one, and nothing else:

  [clone .part.0] [clone .isra.0]  ->  (.part.0.isra.0)   GCC clone suffixes: libiberty
                                                           prints one bracket per clone,
                                                           LLVM one parenthesis for all
  {lambda(int)#2}, 'lambda0'(int)  ->  'lambda'(int)      lambda closures: libiberty
                                                           numbers from #1, LLVM from
                                                           'lambda', 'lambda0', ...;
                                                           the number is dropped
  {unnamed type#1}, 'unnamed1'     ->  'unnamed'          the same for unnamed types
  auto:1                           ->  auto               libiberty numbers generic
                                                           lambdas' auto parameters
  decltype(nullptr)                ->  std::nullptr_t     two spellings of one type
  &(ns::f(int))                    ->  &ns::f             a function's address as a
                                                           template argument: LLVM adds
                                                           parentheses and f's parameters
  spaces                           ->  (none)             '> >' against '>>', etc.

and a name that is another's with one leading word (a return type, 'void ' or 'auto ')
added is the same name: for some local classes and lambdas' static invokers LLVM prints
the enclosing function's return type, libiberty does not.

Anything else counts as a disagreement: another function (a different symbol chosen at
the address), '??' against a name, a name one demangler cannot demangle.
"""
import re

_CLONES = re.compile(r"((?: \[clone \.[^\]]*\])+)$")
_CLONE = re.compile(r"\[clone (\.[^\]]*)\]")
_LEADING_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]* (?=\S)")


def _balanced_end(s, i):
    """Index of the parenthesis closing the one at s[i], or -1."""
    depth = 0
    for k in range(i, len(s)):
        depth += s[k] == "("
        depth -= s[k] == ")"
        if depth == 0:
            return k
    return -1


def _unparen_addresses(s):
    """&(name(params)) and &(name) -> &name."""
    out, i = [], 0
    while True:
        j = s.find("&(", i)
        end = _balanced_end(s, j + 1) if j >= 0 else -1
        if end < 0:
            out.append(s[i:])
            return "".join(out)
        inner = s[j + 2:end]
        if inner.endswith(")"):  # drop the function's parameter list
            depth, k = 0, len(inner) - 1
            while k >= 0:
                depth += inner[k] == ")"
                depth -= inner[k] == "("
                if depth == 0:
                    break
                k -= 1
            if k > 0:
                inner = inner[:k]
        out.append(s[i:j] + "&" + inner)
        i = end + 1


def norm(s):
    m = _CLONES.search(s)
    if m:
        s = s[:m.start()] + " (" + "".join(_CLONE.findall(m.group(1))) + ")"
    s = s.replace("{lambda(", "'lambda'(")
    s = re.sub(r"\)#\d+\}", ")", s)
    s = re.sub(r"'lambda\d+'", "'lambda'", s)
    s = re.sub(r"\{unnamed type#\d+\}|'unnamed\d*'", "'unnamed'", s)
    s = re.sub(r"\bauto:\d+", "auto", s)
    s = s.replace("decltype(nullptr)", "std::nullptr_t")
    s = _unparen_addresses(s)
    return s.replace(" ", "")


def same(a, b):
    """Whether two printed function names are one function's (see the module text)."""
    if norm(a) == norm(b):
        return True
    return norm(_LEADING_WORD.sub("", a, 1)) == norm(b) or norm(a) == norm(
        _LEADING_WORD.sub("", b, 1))
